//go:build amd64 || arm64

package worker

import "golang.org/x/sys/unix"

// deniedSyscalls lists the system calls the worker never makes after its
// setup: every call that names a path, io_uring, and socket creation.
func deniedSyscalls() []uintptr {
	return append([]uintptr{
		unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
		unix.SYS_EXECVE, unix.SYS_EXECVEAT,
		unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_UNLINKAT, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
		unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHOWNAT,
		unix.SYS_TRUNCATE, unix.SYS_UTIMENSAT, unix.SYS_CHDIR, unix.SYS_CHROOT,
		unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_READLINKAT, unix.SYS_NEWFSTATAT, unix.SYS_STATX,
		unix.SYS_STATFS,
		unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_GETXATTR, unix.SYS_LGETXATTR,
		unix.SYS_LISTXATTR, unix.SYS_LLISTXATTR, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR,
		unix.SYS_SETXATTRAT, unix.SYS_GETXATTRAT, unix.SYS_LISTXATTRAT, unix.SYS_REMOVEXATTRAT,
		unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
		unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
		unix.SYS_INOTIFY_ADD_WATCH, unix.SYS_FANOTIFY_INIT, unix.SYS_FANOTIFY_MARK,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL,
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_SOCKET, unix.SYS_SOCKETPAIR,
	}, legacySyscalls...)
}
