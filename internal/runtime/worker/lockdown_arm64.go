package worker

import "golang.org/x/sys/unix"

// seccompArch is the audit architecture of this process's system calls.
const seccompArch = unix.AUDIT_ARCH_AARCH64

// seccompSyscallBit is above every arm64 system call number: any number at
// or above it is refused.
const seccompSyscallBit = 0x80000000

// legacySyscalls is empty: arm64 has only the *at path system calls.
var legacySyscalls []uintptr
