package aws_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func TestCertificateRegistry(t *testing.T) {
	e := newCLBEnv(t)
	for _, bad := range []string{
		"",
		"arn:aws:acm:eu-west-1:123456789012:certificate/not-a-uuid",
		"arn:aws:acm:eu-west-1:1234:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
		"arn:aws:iam::123456789012:role/web",
		"arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/x/1",
	} {
		if err := e.emu.AddCertificate(bad); err == nil {
			t.Errorf("AddCertificate(%q) succeeded", bad)
		}
	}

	// The admin HTTP API: add, list, remove.
	iam := "arn:aws:iam::123456789012:server-certificate/prod/web"
	if st := admin(t, e.env, "POST", "/admin/aws/certificates", `{"arn": "`+iam+`"}`, nil); st != 200 {
		t.Fatalf("add: %d", st)
	}
	if st := admin(t, e.env, "POST", "/admin/aws/certificates", `{"arn": "arn:aws:iam::123456789012:role/web"}`, nil); st != 400 {
		t.Fatalf("add malformed: %d", st)
	}
	var listed []string
	admin(t, e.env, "GET", "/admin/aws/certificates", "", &listed)
	if !slices.Equal(listed, []string{testCert, iam}) || !slices.Equal(e.emu.Certificates(), listed) {
		t.Fatalf("listed %v", listed)
	}

	// IAM certificates serve Classic listeners too; ACM certificates of
	// another region or account do not, as on AWS.
	in := clbInput(e, "iam")
	in.Listeners[1].SSLCertificateId = aws.String(iam)
	must[*elb.CreateLoadBalancerOutput](t)(e.clb.CreateLoadBalancer(ctx(), in))
	for _, arn := range []string{
		"arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
		"arn:aws:acm:eu-west-1:210987654321:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
	} {
		ok(t, e.emu.AddCertificate(arn))
		in := clbInput(e, "elsewhere")
		in.Listeners[1].SSLCertificateId = aws.String(arn)
		_, err := e.clb.CreateLoadBalancer(ctx(), in)
		wantCode(t, err, "CertificateNotFound")
	}

	if st := admin(t, e.env, "POST", "/admin/aws/certificates/remove", `{"arn": "`+iam+`"}`, nil); st != 200 {
		t.Fatalf("remove: %d", st)
	}
	if err := e.emu.RemoveCertificate(iam); err == nil {
		t.Fatal("removing twice succeeded")
	}
	// A removed certificate cannot be used anew; the listener using it stays.
	_, err := e.clb.CreateLoadBalancerListeners(ctx(), &elb.CreateLoadBalancerListenersInput{
		LoadBalancerName: aws.String("iam"), Listeners: []clbtypes.Listener{sslListener(8443, 30444, iam)},
	})
	wantCode(t, err, "CertificateNotFound")
	var lbs []cloudsimaws.ClassicLoadBalancerInfo
	admin(t, e.env, "GET", "/admin/aws/classic-load-balancers", "", &lbs)
	if len(lbs) != 1 || lbs[0].Name != "iam" || lbs[0].Listeners[1].SSLCertificateID != iam || lbs[0].Listeners[1].PolicyNames[0] != "ELBSecurityPolicy-2016-08" {
		t.Fatalf("admin view %+v", lbs)
	}
}

func TestELBv2ListenerCertificatesAndPolicies(t *testing.T) {
	e := newCLBEnv(t)
	lbARN := aws.ToString(createNLB(t, e.env, "nlb").LoadBalancerArn)
	tg := aws.ToString(createTG(t, e.env, "tg", 30443).TargetGroupArn)
	tls := func(port int32, policy string, certs ...string) *elbv2.CreateListenerInput {
		in := forwardListener(lbARN, tg, port)
		in.Protocol = elbtypes.ProtocolEnumTls
		if policy != "" {
			in.SslPolicy = aws.String(policy)
		}
		for _, c := range certs {
			in.Certificates = append(in.Certificates, elbtypes.Certificate{CertificateArn: aws.String(c)})
		}
		return in
	}
	unknown := "arn:aws:acm:eu-west-1:123456789012:certificate/ffffffff-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

	_, err := e.elb.CreateListener(ctx(), tls(443, "", unknown))
	wantTyped[*elbtypes.CertificateNotFoundException](t, err)
	for _, policy := range []string{"ELBSecurityPolicy-1999-01", "ELBSecurityPolicy-TLS13-9-9-2021-06", "tls-1-2"} {
		_, err = e.elb.CreateListener(ctx(), tls(443, policy, e.cert))
		wantTyped[*elbtypes.SSLPolicyNotFoundException](t, err)
	}
	l := must[*elbv2.CreateListenerOutput](t)(e.elb.CreateListener(ctx(), tls(443, "", e.cert))).Listeners[0]
	if aws.ToString(l.SslPolicy) != "ELBSecurityPolicy-2016-08" || aws.ToString(l.Certificates[0].CertificateArn) != e.cert {
		t.Fatalf("listener %+v", l)
	}
	for _, policy := range []string{"ELBSecurityPolicy-TLS13-1-2-2021-06", "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09", "ELBSecurityPolicy-FS-1-2-Res-2020-10"} {
		must[*elbv2.ModifyListenerOutput](t)(e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{ListenerArn: l.ListenerArn, SslPolicy: aws.String(policy)}))
	}
	_, err = e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{ListenerArn: l.ListenerArn, SslPolicy: aws.String("ELBSecurityPolicy-2099-01")})
	wantCode(t, err, "SSLPolicyNotFound")
	_, err = e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{ListenerArn: l.ListenerArn,
		Certificates: []elbtypes.Certificate{{CertificateArn: aws.String(unknown)}}})
	wantCode(t, err, "CertificateNotFound")

	// Deleting the certificate does not break the listener.
	ok(t, e.emu.RemoveCertificate(e.cert))
	must[*elbv2.ModifyListenerOutput](t)(e.elb.ModifyListener(ctx(), &elbv2.ModifyListenerInput{ListenerArn: l.ListenerArn, Port: aws.Int32(8443)}))
}
