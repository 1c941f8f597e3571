package aws_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// TestInstanceTagErrors: what upstream's tagging controller reads from
// CreateTags/DeleteTags on instances. A malformed ID is InvalidID (where
// DescribeInstances says InvalidInstanceID.Malformed), an unknown one
// InvalidInstanceID.NotFound; one bad instance fails the whole call and
// tags nothing; 50 tags per resource is the limit (TagLimitExceeded),
// counting keys the call overwrites once.
func TestInstanceTagErrors(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 2})
	tag := []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("a")}}

	_, err := e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{"i-kwok-node-1"}, Tags: tag})
	wantCode(t, err, "InvalidID")
	_, err = e.ec2.DeleteTags(ctx(), &ec2.DeleteTagsInput{Resources: []string{"i-kwok-node-1"}, Tags: tag})
	wantCode(t, err, "InvalidID")
	_, err = e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-kwok-node-1"}})
	wantCode(t, err, "InvalidInstanceID.Malformed")
	_, err = e.ec2.DeleteTags(ctx(), &ec2.DeleteTagsInput{Resources: []string{"i-0123456789abcdef0"}, Tags: tag})
	wantCode(t, err, "InvalidInstanceID.NotFound")

	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{ids[0], "i-0123456789abcdef0", ids[1]}, Tags: tag})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	for _, id := range ids {
		if got := resourceTags(e, id); got["team"] != "" {
			t.Fatalf("%s tagged by a refused call: %v", id, got)
		}
	}

	var many []ec2types.Tag
	for i := range 50 { // the launch's own tags count too
		many = append(many, ec2types.Tag{Key: aws.String(fmt.Sprintf("k%02d", i)), Value: aws.String("v")})
	}
	have := len(resourceTags(e, ids[0]))
	must[*ec2.CreateTagsOutput](t)(e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: ids[:1], Tags: many[:50-have]}))
	// Overwriting a key adds nothing.
	must[*ec2.CreateTagsOutput](t)(e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: ids[:1], Tags: many[:1]}))
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: ids[:1], Tags: tag})
	wantCode(t, err, "TagLimitExceeded")
}
