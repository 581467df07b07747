//go:build wasip1

package ptc

import (
	"runtime"
	"unsafe"
)

//go:wasmimport ptc_v1 call
func ptcCall(namePtr unsafe.Pointer, nameLen uint32, argsPtr unsafe.Pointer, argsLen uint32, out unsafe.Pointer) int32

//go:wasmimport ptc_v1 call_batch
func ptcCallBatch(reqPtr unsafe.Pointer, reqLen uint32, out unsafe.Pointer) int32

//go:wasmimport ptc_v1 read
func ptcRead(handle uint32, buf unsafe.Pointer, bufLen uint32) int32

// wasmHost calls the ptc_v1 host functions.
type wasmHost struct{}

func hostABI() host { return wasmHost{} }

func (wasmHost) call(name string, args []byte) (int32, []byte) {
	var out [2]uint32
	status := ptcCall(unsafe.Pointer(unsafe.StringData(name)), uint32(len(name)),
		unsafe.Pointer(unsafe.SliceData(args)), uint32(len(args)), unsafe.Pointer(&out))
	runtime.KeepAlive(name)
	runtime.KeepAlive(args)
	return status, fetch(out)
}

func (wasmHost) callBatch(req []byte) (int32, []byte) {
	var out [2]uint32
	status := ptcCallBatch(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)), unsafe.Pointer(&out))
	runtime.KeepAlive(req)
	return status, fetch(out)
}

// fetch reads the payload named by an out record {handle, length}.
func fetch(out [2]uint32) []byte {
	buf := make([]byte, out[1])
	n := ptcRead(out[0], unsafe.Pointer(unsafe.SliceData(buf)), uint32(len(buf)))
	runtime.KeepAlive(buf)
	return buf[:n]
}
