package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// measured is one run's figures.
type measured struct {
	Events     int64   `json:"events"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	// PeakAnonKiB is the largest anonymous resident memory (RssAnon: heap,
	// stacks, the store's allocations; not the binary's file pages, which
	// VmHWM counts) sampled while a sluice run went (0: not sampled).
	PeakAnonKiB int64   `json:"peak_anon_kib,omitempty"`
	Load        float64 `json:"load"` // 1-minute load average when the run started
	// BrokerCPUSeconds is the Kafka broker's CPU over the same span (a
	// Kafka run): it shares the cores.
	BrokerCPUSeconds float64 `json:"broker_cpu_seconds,omitempty"`
}

func (m measured) eventsPerSec() float64 { return float64(m.Events) / m.Seconds }

func (m measured) cpuPerMillion() float64 { return m.CPUSeconds / (float64(m.Events) / 1e6) }

// selfCPU is this process's user+system CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// procCPU is process pid's user+system CPU time in seconds, from
// /proc/PID/stat (fields 14 and 15).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times %q %q", pid, f[11], f[12])
	}
	return float64(ut+st) / clockTicks, nil
}

// hwmKiB is the peak resident set (VmHWM) of /proc/<who> ("self" or a
// pid), in KiB; 0 when it cannot be read.
func hwmKiB(who string) int64 { return statusKiB(who, "VmHWM:") }

// statusKiB is field (e.g. "RssAnon:") of /proc/<who>/status in KiB; 0
// when it cannot be read.
func statusKiB(who, field string) int64 {
	f, err := os.Open("/proc/" + who + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fs := strings.Fields(s.Text()); len(fs) >= 2 && fs[0] == field {
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			return n
		}
	}
	return 0
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
