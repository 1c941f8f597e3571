package gce

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Messages the API serves that cloud.google.com/go/compute/apiv1/computepb
// (v1.73.0) no longer has: the legacy HttpHealthCheck, which target pools
// still require and which upstream's CCM calls through
// google.golang.org/api/compute/v1. They are described here from the
// discovery document's schema (compute-api.json of google.golang.org/api)
// and built as dynamic messages, so protojson, filters and the generic
// kind code treat them like any computepb message. proto2 gives every
// field presence, as the discovery schema's optional fields have.

// legacyField is one field of a legacy message: its JSON name and type.
type legacyField struct {
	json string
	typ  descriptorpb.FieldDescriptorProto_Type
	// message names a message field's type within the legacy file.
	message  string
	repeated bool
}

var (
	tString = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tInt32  = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tUint64 = descriptorpb.FieldDescriptorProto_TYPE_UINT64
	tMsg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

// legacyMessages are the messages, by name, with their fields in the
// discovery document's order.
var legacyMessages = []struct {
	name   string
	fields []legacyField
}{
	{"HttpHealthCheck", []legacyField{
		{json: "checkIntervalSec", typ: tInt32}, {json: "creationTimestamp", typ: tString},
		{json: "description", typ: tString}, {json: "healthyThreshold", typ: tInt32},
		{json: "host", typ: tString}, {json: "id", typ: tUint64}, {json: "kind", typ: tString},
		{json: "name", typ: tString}, {json: "port", typ: tInt32}, {json: "requestPath", typ: tString},
		{json: "selfLink", typ: tString}, {json: "timeoutSec", typ: tInt32},
		{json: "unhealthyThreshold", typ: tInt32},
	}},
	{"HttpHealthCheckList", []legacyField{
		{json: "id", typ: tString}, {json: "items", typ: tMsg, message: "HttpHealthCheck", repeated: true},
		{json: "kind", typ: tString}, {json: "nextPageToken", typ: tString}, {json: "selfLink", typ: tString},
	}},
}

// legacyPackage keeps the messages' names clear of computepb's.
const legacyPackage = "cloudsim.gce.legacy"

// legacy holds the built descriptors by message name.
var legacy = buildLegacyMessages()

func buildLegacyMessages() map[string]protoreflect.MessageDescriptor {
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("cloudsim/gce/legacy.proto"),
		Package: proto.String(legacyPackage),
		Syntax:  proto.String("proto2"),
	}
	for _, m := range legacyMessages {
		md := &descriptorpb.DescriptorProto{Name: proto.String(m.name)}
		for i, f := range m.fields {
			label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
			if f.repeated {
				label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
			}
			fd := &descriptorpb.FieldDescriptorProto{
				Name: proto.String(f.json), JsonName: proto.String(f.json),
				Number: proto.Int32(int32(i + 1)), Label: label.Enum(), Type: f.typ.Enum(),
			}
			if f.message != "" {
				fd.TypeName = proto.String("." + legacyPackage + "." + f.message)
			}
			md.Field = append(md.Field, fd)
		}
		file.MessageType = append(file.MessageType, md)
	}
	fd, err := protodesc.NewFile(file, nil)
	if err != nil {
		// Only a mistake in the table above gets here.
		panic(fmt.Sprintf("cloudsim/gce: legacy messages: %v", err))
	}
	out := map[string]protoreflect.MessageDescriptor{}
	for i := range fd.Messages().Len() {
		md := fd.Messages().Get(i)
		out[string(md.Name())] = md
	}
	return out
}

// newLegacy makes an empty legacy message.
func newLegacy(name string) proto.Message { return dynamicpb.NewMessage(legacy[name]) }

// getInt32 reads an int32 field (0 when unset or absent).
func getInt32(m proto.Message, jsonName string) int32 {
	fd := fieldOf(m, jsonName)
	if fd == nil || fd.Kind() != protoreflect.Int32Kind || !m.ProtoReflect().Has(fd) {
		return 0
	}
	return int32(m.ProtoReflect().Get(fd).Int())
}

// hasField reports whether a singular field is set.
func hasField(m proto.Message, jsonName string) bool {
	fd := fieldOf(m, jsonName)
	return fd != nil && m.ProtoReflect().Has(fd)
}

func setInt32(m proto.Message, jsonName string, v int32) {
	if fd := fieldOf(m, jsonName); fd != nil && fd.Kind() == protoreflect.Int32Kind {
		m.ProtoReflect().Set(fd, protoreflect.ValueOfInt32(v))
	}
}
