package server

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	protov2 "google.golang.org/protobuf/proto"
)

// Requests that do not decode. grpc-go answers a request message it cannot
// decode (broken wire format, a string field that is not UTF-8) with
// INTERNAL — a server fault, logged as one, that tells the caller nothing.
// ptcd's codec decodes such a message as an empty one that carries the
// decoding error in an unknown field of its own, and the innermost
// interceptor answers INVALID_ARGUMENT for it before any handler sees it.
// Responses are encoded as usual.

// badMessageField is the field that marks a message that did not decode:
// the largest field number, which no ptc.v1 message uses.
const badMessageField protowire.Number = protowire.MaxValidNumber

// maxDecodeErrorBytes bounds the error text a marked message carries.
const maxDecodeErrorBytes = 200

// requestCodec is the proto codec with undecodable messages marked rather
// than failed.
type requestCodec struct{ base encoding.CodecV2 }

// newRequestCodec wraps grpc-go's proto codec.
func newRequestCodec() requestCodec {
	return requestCodec{base: encoding.GetCodecV2(proto.Name)}
}

// Marshal encodes as the proto codec does.
func (c requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// Unmarshal decodes as the proto codec does; a message that does not
// decode is left empty and marked with the error.
// A ptc.v1 message is made contiguous once (as the proto codec does),
// its repeated fields counted there (counts.go), then decoded from it.
func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(protov2.Message)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	total := 0
	err := countEntries(b, m.ProtoReflect().Descriptor(), 0, &total)
	if err == nil {
		err = protov2.Unmarshal(b, m)
	}
	if err != nil {
		mark(m, err)
	}
	return nil
}

// mark leaves m empty and marked with err.
func mark(m protov2.Message, err error) {
	protov2.Reset(m)
	text := err.Error()
	if len(text) > maxDecodeErrorBytes {
		text = text[:maxDecodeErrorBytes]
	}
	tag := protowire.AppendTag(nil, badMessageField, protowire.BytesType)
	m.ProtoReflect().SetUnknown(protowire.AppendBytes(tag, []byte(text)))
}

// Name is the proto codec's name: the codec replaces it.
func (requestCodec) Name() string { return proto.Name }

// decodeError returns the error a marked message carries.
func decodeError(v any) (string, bool) {
	m, ok := v.(protov2.Message)
	if !ok {
		return "", false
	}
	b := m.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if num == badMessageField && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", false
			}
			return string(v), true
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
	}
	return "", false
}

// malformed is the status of a request that did not decode.
func malformed(text string) error {
	if strings.HasPrefix(text, tooManyPrefix) {
		return status.Error(codes.InvalidArgument, "the request has "+text)
	}
	return status.Error(codes.InvalidArgument, fmt.Sprintf("the request is not a valid protobuf message of the ptc.v1 contract (%q); check the client's encoding: strings must be UTF-8", text))
}

// refuseMalformedUnary answers INVALID_ARGUMENT for a request that did not
// decode.
func refuseMalformedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if text, bad := decodeError(req); bad {
		return nil, malformed(text)
	}
	return h(ctx, req)
}

// refuseMalformedStream makes a stream's RecvMsg fail with INVALID_ARGUMENT
// for a message that did not decode.
func refuseMalformedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, checkedStream{ss})
}

// checkedStream is a server stream whose received messages are checked.
type checkedStream struct{ grpc.ServerStream }

// RecvMsg receives a message and refuses one that did not decode.
func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if text, bad := decodeError(m); bad {
		return malformed(text)
	}
	return nil
}
