package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procMemory returns VmHWM and VmRSS of process pid in bytes.
func procMemory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmHWM" && k != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		if k == "VmHWM" {
			hwm = kb << 10
		} else {
			rss = kb << 10
		}
	}
	if hwm == 0 || rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmHWM and VmRSS", pid)
	}
	return hwm, rss, sc.Err()
}

// cpuSeconds is the user and system CPU time process pid has used so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:])) // f[0] is the state, field 3 of stat
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return float64(utime+stime) / 100, nil // clock ticks of 1/100 s
}

// cpuOf runs fn and returns the CPU seconds process pid used meanwhile.
func cpuOf(pid int, fn func() error) (float64, error) {
	before, err := cpuSeconds(pid)
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	after, err := cpuSeconds(pid)
	return after - before, err
}

// threadsCPU is the CPU time, in seconds, the threads process pid has now
// have run, summed from /proc/<pid>/task/*/schedstat (nanoseconds, so a
// request's few milliseconds are counted, not 10 ms ticks). A thread that
// exits between two readings drops out of the second: the Go runtime
// rarely ends one.
func threadsCPU(pid int) (float64, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: unexpected format", pid, t.Name())
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat: %w", pid, t.Name(), err)
		}
		ns += v
	}
	return float64(ns) / 1e9, nil
}
