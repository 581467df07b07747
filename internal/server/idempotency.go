package server

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/idem"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// WithIdempotency makes Execute and Session idempotent by the
// execution_id their caller gives (internal/idem): a request repeated
// with the same id and the same request, within cfg.Retention, gets the
// kept outcome or waits for the running one instead of running again; the
// same id with another request is ALREADY_EXISTS, naming the field. An
// Execute with an id runs detached from its call: the caller's deadline,
// cancellation or dropped connection ends only its wait, so that a retry
// gets the outcome; once every caller gave up and none came back within
// cfg.Linger, the execution is cancelled (and its CANCELLED outcome kept).
// A zero Retention leaves it off (the default).
func WithIdempotency(cfg idem.Config) Option {
	return func(s *Server) {
		if cfg.Retention > 0 {
			s.idem = idem.New[[]byte](cfg)
			s.idemLinger = cfg.Linger
		}
	}
}

// deliveryOnly are the ExecuteRequest fields that change how an outcome
// is delivered, not what runs: a repeat may differ in them. execution_id
// is the key itself.
var deliveryOnly = map[protoreflect.Name]bool{
	"execution_id": true, "stream_logs": true, "stream_progress": true, "progress_values": true,
}

// requestDigest is the digest of what runs: every field of in but the
// delivery-only ones (a field added to ExecuteRequest counts without a
// change here), each in its deterministic wire encoding, and a Session's
// client tools as "client_tools" too.
func requestDigest(in *ptcv1.ExecuteRequest, sessionTools []*ptcv1.ToolDefinition) idem.Digest {
	m := in.ProtoReflect()
	fields := m.Descriptor().Fields()
	d := make(idem.Digest, 0, fields.Len()+1)
	enc := proto.MarshalOptions{Deterministic: true}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if deliveryOnly[fd.Name()] {
			continue
		}
		one := &ptcv1.ExecuteRequest{}
		if m.Has(fd) {
			one.ProtoReflect().Set(fd, m.Get(fd))
		}
		b, _ := enc.Marshal(one)
		d = append(d, idem.Field{Name: string(fd.Name()), Sum: sha256.Sum256(b)})
	}
	h := sha256.New()
	for _, t := range sessionTools {
		b, _ := enc.Marshal(t)
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	f := idem.Field{Name: "SessionStart.client_tools"}
	h.Sum(f.Sum[:0])
	return append(d, f)
}

// idemKey is the record's key of a request with a client-given id: the
// caller's tenant and the id.
func idemKey(ctx context.Context, id string) idem.Key {
	k := idem.Key{ID: id}
	if t, ok := auth.FromContext(ctx); ok {
		k.Tenant = t.Name
	}
	return k
}

// idemStatus is the status of a request the record refuses.
func idemStatus(err error) error {
	var m *idem.MismatchError
	var nk *idem.NotKeptError
	var busy *idem.BusyError
	switch {
	case errors.As(err, &m) || errors.As(err, &nk):
		return wire.Status(fault.Reject(fault.CodeAlreadyExists, "%s", err.Error()))
	case errors.As(err, &busy):
		return wire.Status(fault.Reject(fault.CodeResourceExhausted, "%s", err.Error()))
	}
	return wire.Status(fault.Reject(fault.CodeInternal, "%s", err.Error()))
}

// idemWaitStatus is the status of a wait that ended without an outcome:
// refused for the waiters' bound, or the status the first request's
// refusal gave every caller.
func idemWaitStatus(err error) error {
	var busy *idem.BusyError
	if errors.As(err, &busy) {
		return idemStatus(err)
	}
	return err
}

// outcomeOfRun is what the record keeps of a run: the response in its
// wire encoding and its size, or the status of a request that did not
// run. The record keeps the bytes, not the message: a decoded response
// takes several times its wire size (an empty log entry about 150 bytes
// against 15), and idempotency.max_bytes bounds what is held.
func outcomeOfRun(res *core.Result, ferr *fault.Error) ([]byte, int64, error) {
	if ferr != nil {
		return nil, 0, wire.Status(ferr)
	}
	b, err := proto.Marshal(wire.ResultPB(res))
	if err != nil {
		return nil, 0, wire.Status(fault.Reject(fault.CodeInternal, "the outcome cannot be encoded: %v", err))
	}
	return b, int64(len(b)), nil
}

// keptOutcome decodes an outcome the record kept.
func keptOutcome(b []byte) (*ptcv1.ExecuteResponse, error) {
	pb := &ptcv1.ExecuteResponse{}
	if err := proto.Unmarshal(b, pb); err != nil {
		return nil, wire.Status(fault.Reject(fault.CodeInternal, "the kept outcome cannot be decoded: %v", err))
	}
	return pb, nil
}

// executeOnce is Execute for a request with an execution_id under the
// record. The first request runs on a goroutine of the server, detached
// from its call: it ends with the execution (bounded by its limits, and
// by CancelAll), and WaitDetached waits for it. Every request, the first
// included, waits for the outcome or for its own context.
func (s *Server) executeOnce(ctx context.Context, in *ptcv1.ExecuteRequest) (*ptcv1.ExecuteResponse, error) {
	key := idemKey(ctx, in.GetExecutionId())
	c, first, err := s.idem.Claim(key, requestDigest(in, nil))
	if err != nil {
		return nil, idemStatus(err)
	}
	// Only the first request is converted: a repeat waits holding nothing
	// of its own but the message gRPC decoded.
	if first {
		req, ferr := executeRequest(in)
		if ferr != nil {
			// Refused: the callers waiting get the refusal, and the id is
			// free for a retry.
			err := wire.Status(ferr)
			s.idem.Finish(key, c, nil, 0, err)
			return nil, err
		}
		// The context keeps the call's values (tenant, span) without its
		// end, and log fields of its own (the call's may be logged while
		// the execution still runs); it ends when every caller gave up
		// for the linger, and Run ends it on CancelAll.
		dctx, abandon := context.WithCancel(logging.InjectFields(context.WithoutCancel(ctx), nil))
		c.Abandon(s.idemLinger, abandon)
		s.detached.Add(1)
		go func() {
			defer s.detached.Done()
			defer abandon()
			out, size, err := outcomeOfRun(s.Run(dctx, req))
			s.idem.Finish(key, c, out, size, err)
		}()
	}
	b, err := c.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, idemWaitStatus(err)
	}
	pb, err := keptOutcome(b)
	if err != nil {
		return nil, err
	}
	logging.AddFields(ctx, logging.Fields{"execution_id", pb.GetExecutionId(), "repeated", !first})
	return pb, nil
}

// sessionOnce claims a Session's id in the record. It returns finish
// (nil when the record is off, or the request has no id) for the first
// request, which must call it once with the outcome; for a repeat, kept
// is the outcome to send, after waiting for the running one.
func (s *Server) sessionOnce(ctx context.Context, start *ptcv1.SessionStart) (finish func(*core.Result, *fault.Error), kept *ptcv1.ExecuteResponse, err error) {
	id := start.GetExecute().GetExecutionId()
	if s.idem == nil || id == "" {
		return nil, nil, nil
	}
	key := idemKey(ctx, id)
	c, first, err := s.idem.Claim(key, requestDigest(start.GetExecute(), start.GetClientTools()))
	if err != nil {
		return nil, nil, idemStatus(err)
	}
	if first {
		return func(res *core.Result, ferr *fault.Error) {
			out, size, err := outcomeOfRun(res, ferr)
			s.idem.Finish(key, c, out, size, err)
		}, nil, nil
	}
	b, err := c.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, nil, idemWaitStatus(err)
	}
	pb, err := keptOutcome(b)
	if err != nil {
		return nil, nil, err
	}
	logging.AddFields(ctx, logging.Fields{"execution_id", pb.GetExecutionId(), "repeated", true})
	return nil, pb, nil
}
