//go:build unix

package main

import "syscall"

// syncFS flushes every file system's dirty pages to disk.
func syncFS() { syscall.Sync() }
