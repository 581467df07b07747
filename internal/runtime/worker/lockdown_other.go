//go:build !amd64 && !arm64

package worker

// seccompArch is 0 where the worker has no system call table: the seccomp
// layer is reported as unavailable (Landlock still applies).
const seccompArch = 0

const seccompSyscallBit = 0

func deniedSyscalls() []uintptr { return nil }
