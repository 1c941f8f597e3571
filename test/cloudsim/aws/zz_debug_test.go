package aws_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

type traceConn struct {
	*net.TCPConn
}

var stacks sync.Map

func (c *traceConn) Close() error {
	stacks.Store(c.LocalAddr().String(), string(debug.Stack()))
	return c.TCPConn.Close()
}

func TestZZDebug(t *testing.T) {
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region})
	for range 4 {
		emu.Launch(cloudsimaws.LaunchSpec{Count: 3})
	}
	srv, _ := cloudsim.Start(emu)
	defer srv.Close()
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, n, a string) (net.Conn, error) {
			c, err := dial(ctx, n, a)
			if err != nil {
				return nil, err
			}
			return &traceConn{c.(*net.TCPConn)}, nil
		}
	})
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), HTTPClient: hc}
	c := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(srv.URL()) })
	for i := 0; i < 30; i++ {
		_, err := c.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{})
		if err != nil {
			stacks.Range(func(k, v any) bool { fmt.Println("CLOSE", k, v); return true })
			t.Fatal(err)
		}
	}
}
