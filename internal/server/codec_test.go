package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools/demo"
)

// rawCodec sends and receives bytes as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T", v)
	}
	return b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T", v)
	}
	*p = append((*p)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// scriptRequest encodes ExecuteRequest{script: {language: 1, source}} by
// hand, so that the source may be any bytes.
func scriptRequest(source []byte) []byte {
	var script []byte
	script = protowire.AppendTag(script, 1, protowire.VarintType)
	script = protowire.AppendVarint(script, 1)
	script = protowire.AppendTag(script, 2, protowire.BytesType)
	script = protowire.AppendBytes(script, source)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), script)
}

// TestMalformedRequestsAreInvalidArgument: with ptcd's interceptors, a
// request that does not decode — broken wire format, a source that is not
// UTF-8 — is INVALID_ARGUMENT (grpc-go's default is INTERNAL), unary and
// on a Session stream, first message or later; valid messages, unknown
// fields included, run.
func TestMalformedRequestsAreInvalidArgument(t *testing.T) {
	ex := newExecutor(t, demo.Tools()...)
	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	conn := serve(t, gs)
	ctx := context.Background()

	unknown := append(scriptRequest([]byte("return 1")), protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7)...)
	for _, c := range []struct {
		name string
		wire []byte
		code codes.Code
	}{
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}, codes.InvalidArgument},
		{"truncated", scriptRequest([]byte("return 1"))[:5], codes.InvalidArgument},
		{"invalid UTF-8 source", scriptRequest([]byte("return \"\xff\xfe\"")), codes.InvalidArgument},
		{"valid", scriptRequest([]byte("return 1")), codes.OK},
		{"unknown field", unknown, codes.OK},
	} {
		t.Run("unary/"+c.name, func(t *testing.T) {
			var out []byte
			err := conn.Invoke(ctx, "/ptc.v1.RunnerService/Execute", c.wire, &out, grpc.ForceCodec(rawCodec{}))
			if status.Code(err) != c.code {
				t.Fatalf("code %v (%v), want %v", status.Code(err), err, c.code)
			}
		})
	}

	session := func(t *testing.T, msgs ...[]byte) error {
		t.Helper()
		desc := &grpc.StreamDesc{StreamName: "Session", ServerStreams: true, ClientStreams: true}
		s, err := conn.NewStream(ctx, desc, "/ptc.v1.RunnerService/Session", grpc.ForceCodec(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if i > 0 {
				// Later messages answer the server's tool call: wait for it.
				var call []byte
				if err := s.RecvMsg(&call); err != nil {
					return err
				}
			}
			if err := s.SendMsg(m); err != nil {
				break
			}
		}
		for {
			var out []byte
			if err := s.RecvMsg(&out); err != nil {
				return err
			}
		}
	}
	start := func(source string) []byte {
		var st []byte
		st = protowire.AppendTag(st, 1, protowire.BytesType)
		st = protowire.AppendBytes(st, scriptRequest([]byte(source)))
		// SessionStart.client_tools: one tool named "c".
		def := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("c"))
		st = protowire.AppendBytes(protowire.AppendTag(st, 2, protowire.BytesType), def)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), st)
	}
	t.Run("session/first message", func(t *testing.T) {
		if err := session(t, []byte{0xff, 0xff, 0xff}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("session/valid", func(t *testing.T) {
		// The control: the same conversation with a valid tool result ends
		// with the result (then EOF).
		result := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("c1"))
		result = protowire.AppendBytes(protowire.AppendTag(result, 2, protowire.BytesType), []byte("1"))
		good := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), result)
		if err := session(t, start(`await tools.c({}); return 1`), good); err != io.EOF {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("session/later message", func(t *testing.T) {
		// A tool result whose call_id is not UTF-8.
		result := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("c\xff"))
		bad := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), result)
		if err := session(t, start(`await tools.c({}); return 1`), bad); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("err %v", err)
		}
	})
}
