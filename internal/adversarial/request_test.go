package adversarial

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// opt adjusts a request.
type opt func(*ptcv1.ExecuteRequest)

// jsReq is a JavaScript request.
func jsReq(src string, opts ...opt) *ptcv1.ExecuteRequest {
	return build(ptcv1.Language_LANGUAGE_JAVASCRIPT, src, opts)
}

// tsReq is a TypeScript request.
func tsReq(src string, opts ...opt) *ptcv1.ExecuteRequest {
	return build(ptcv1.Language_LANGUAGE_TYPESCRIPT, src, opts)
}

// wasmReq is a WebAssembly request.
func wasmReq(module []byte, opts ...opt) *ptcv1.ExecuteRequest {
	r := &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_WASM, WasmModule: module}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func build(lang ptcv1.Language, src string, opts []opt) *ptcv1.ExecuteRequest {
	r := &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: lang, Source: src}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func limits(r *ptcv1.ExecuteRequest) *ptcv1.Limits {
	if r.Limits == nil {
		r.Limits = &ptcv1.Limits{}
	}
	return r.Limits
}

func timeout(d time.Duration) opt {
	return func(r *ptcv1.ExecuteRequest) { limits(r).Timeout = durationpb.New(d) }
}

func cpu(d time.Duration) opt {
	return func(r *ptcv1.ExecuteRequest) { limits(r).CpuTime = durationpb.New(d) }
}

func memory(n int64) opt { return func(r *ptcv1.ExecuteRequest) { limits(r).MemoryBytes = n } }

func maxCalls(n int32) opt { return func(r *ptcv1.ExecuteRequest) { limits(r).MaxToolCalls = n } }

func maxConcurrent(n int32) opt {
	return func(r *ptcv1.ExecuteRequest) { limits(r).MaxConcurrentToolCalls = n }
}

func maxOutput(n int64) opt { return func(r *ptcv1.ExecuteRequest) { limits(r).MaxOutputBytes = n } }

func maxLogs(n int64) opt { return func(r *ptcv1.ExecuteRequest) { limits(r).MaxLogBytes = n } }

func input(j string) opt { return func(r *ptcv1.ExecuteRequest) { r.InputJson = j } }

func schema(j string) opt { return func(r *ptcv1.ExecuteRequest) { r.ResultSchemaJson = j } }

func execID(id string) opt { return func(r *ptcv1.ExecuteRequest) { r.ExecutionId = id } }

func allowed(names ...string) opt { return func(r *ptcv1.ExecuteRequest) { r.AllowedTools = names } }

func withResults(r *ptcv1.ExecuteRequest) { r.IncludeToolResults = true }

// tight are the limits of a bomb: it ends in seconds whatever it does,
// with time enough on a loaded machine to reach its memory limit first.
func tight(r *ptcv1.ExecuteRequest) {
	timeout(6 * time.Second)(r)
	cpu(3 * time.Second)(r)
	memory(64 << 20)(r)
}

const (
	MiB = 1 << 20
	KiB = 1 << 10
)
