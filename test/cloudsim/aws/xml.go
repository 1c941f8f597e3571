package aws

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"time"
)

const (
	ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"
	elbNamespace = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"
)

// innerXML marshals body and strips its outer element, leaving the field
// elements. Response bodies are plain structs whose fields become the
// children of the protocol's envelope.
func innerXML(body any) ([]byte, error) {
	if body == nil {
		return nil, nil
	}
	b, err := xml.Marshal(body)
	if err != nil {
		return nil, err
	}
	start := bytes.IndexByte(b, '>')
	end := bytes.LastIndex(b, []byte("</"))
	if start < 0 || end < start || b[start-1] == '/' {
		return nil, nil // self-closed: no fields
	}
	return b[start+1 : end], nil
}

// writeEC2Response writes the ec2Query success envelope. Unlike awsQuery
// there is no <ActionResult> wrapper: fields sit next to <requestId>.
func writeEC2Response(w http.ResponseWriter, action, requestID string, body any) {
	inner, err := innerXML(body)
	if err != nil {
		writeEC2Error(w, requestID, apiErr("InternalError", "cloudsim: marshal %s: %v", action, err))
		return
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s"><requestId>%s</requestId>`, action, ec2Namespace, requestID)
	buf.Write(inner)
	fmt.Fprintf(&buf, `</%sResponse>`, action)
	writeXML(w, http.StatusOK, requestID, buf.Bytes())
}

// writeEC2Error writes EC2's error shape, whose request ID element is
// spelled RequestID, not RequestId as in awsQuery.
func writeEC2Error(w http.ResponseWriter, requestID string, e *apiError) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString(`<Response><Errors><Error><Code>`)
	_ = xml.EscapeText(&buf, []byte(e.Code))
	buf.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&buf, []byte(e.Message))
	fmt.Fprintf(&buf, `</Message></Error></Errors><RequestID>%s</RequestID></Response>`, requestID)
	writeXML(w, e.status(), requestID, buf.Bytes())
}

// writeELBResponse writes the awsQuery success envelope.
func writeELBResponse(w http.ResponseWriter, action, requestID string, body any) {
	inner, err := innerXML(body)
	if err != nil {
		writeELBError(w, requestID, apiErr("InternalFailure", "cloudsim: marshal %s: %v", action, err))
		return
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s"><%sResult>`, action, elbNamespace, action)
	buf.Write(inner)
	fmt.Fprintf(&buf, `</%sResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></%sResponse>`,
		action, requestID, action)
	writeXML(w, http.StatusOK, requestID, buf.Bytes())
}

// writeELBError writes awsQuery's error shape. Type tells whose fault it
// is: Sender for 4xx, Receiver for 5xx.
func writeELBError(w http.ResponseWriter, requestID string, e *apiError) {
	kind := "Sender"
	if e.status() >= 500 {
		kind = "Receiver"
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>`, elbNamespace, kind)
	_ = xml.EscapeText(&buf, []byte(e.Code))
	buf.WriteString(`</Code><Message>`)
	_ = xml.EscapeText(&buf, []byte(e.Message))
	fmt.Fprintf(&buf, `</Message></Error><RequestId>%s</RequestId></ErrorResponse>`, requestID)
	writeXML(w, e.status(), requestID, buf.Bytes())
}

func writeXML(w http.ResponseWriter, status int, requestID string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/xml;charset=UTF-8")
	h.Set("x-amzn-RequestId", requestID)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newRequestID returns a UUID-shaped request ID like AWS's.
func newRequestID() string {
	a, b := rand.Uint64(), rand.Uint64()
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// awsTime formats timestamps the way both protocols send them.
func awsTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ec2Tag and elbTag are the two protocols' spellings of a tag.
type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type elbTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value,omitempty"`
}

func ec2Tags(tags map[string]string) []ec2Tag {
	out := make([]ec2Tag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, ec2Tag{Key: k, Value: tags[k]})
	}
	return out
}

func elbTags(tags map[string]string) []elbTag {
	out := make([]elbTag, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, elbTag{Key: k, Value: tags[k]})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
