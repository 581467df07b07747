package worker

import "golang.org/x/sys/unix"

// seccompArch is the audit architecture of this process's system calls.
const seccompArch = unix.AUDIT_ARCH_X86_64

// seccompSyscallBit marks x32 system calls (__X32_SYSCALL_BIT): any number
// at or above it is refused.
const seccompSyscallBit = 0x40000000

// legacySyscalls are the path system calls amd64 has besides the *at ones.
var legacySyscalls = []uintptr{
	unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_MKDIR, unix.SYS_MKNOD, unix.SYS_RMDIR, unix.SYS_UNLINK,
	unix.SYS_RENAME, unix.SYS_LINK, unix.SYS_SYMLINK, unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN,
	unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT, unix.SYS_ACCESS, unix.SYS_READLINK,
	unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_USELIB,
}
