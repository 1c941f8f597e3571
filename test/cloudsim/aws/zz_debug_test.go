package aws_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

var dbgMu sync.Mutex
var dbgLog []string

type logBody struct {
	io.ReadCloser
	n  int
	id int
}

func (b *logBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += n
	if err != nil {
		dbgMu.Lock()
		dbgLog = append(dbgLog, fmt.Sprintf("body %d read err after %d: %v", b.id, b.n, err))
		dbgMu.Unlock()
	}
	return n, err
}

func (b *logBody) Close() error {
	dbgMu.Lock()
	dbgLog = append(dbgLog, fmt.Sprintf("body %d close after %d bytes\n%s", b.id, b.n, strings.Join(strings.Split(string(debug.Stack()), "\n")[5:9], "\n")))
	dbgMu.Unlock()
	return b.ReadCloser.Close()
}

type logRT struct {
	base http.RoundTripper
	n    int
}

func (r *logRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n++
	n := r.n
	go func() {
		<-req.Context().Done()
		dbgMu.Lock()
		dbgLog = append(dbgLog, fmt.Sprintf("req %d ctx done: %v ctx=%v", n, context.Cause(req.Context()), req.Context()))
		dbgMu.Unlock()
	}()
	resp, err := r.base.RoundTrip(req)
	if resp != nil {
		dbgMu.Lock()
		dbgLog = append(dbgLog, fmt.Sprintf("resp %d cl=%d", r.n, resp.ContentLength))
		dbgMu.Unlock()
		resp.Body = &logBody{ReadCloser: resp.Body, id: r.n}
	}
	return resp, err
}

func debugTransport() http.RoundTripper {
	return &logRT{base: http.DefaultTransport.(*http.Transport).Clone()}
}

func TestZZDebug(t *testing.T) {
	e := newEnv(t)
	for range 4 {
		launch(t, e, cloudsimaws.LaunchSpec{Count: 3})
	}
	failed := false
	p := ec2.NewDescribeInstancesPaginator(e.ec2, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		_, err := p.NextPage(ctx())
		if err != nil {
			failed = true
			break
		}
	}
	_, err := e.ec2.DescribeInstances(ctx(), &ec2.DescribeInstancesInput{})
	failed = failed || err != nil
	if failed {
		for _, l := range dbgLog {
			fmt.Println(l)
		}
	}
}
