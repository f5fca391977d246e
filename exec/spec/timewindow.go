package spec

import (
	"fmt"
	"time"

	"sluice/sql/types"
)

// WatermarkSpec is a source's `WATERMARK FOR col AS col - INTERVAL …`: the
// source's watermark is the largest value of column Col it has read, minus
// Delay. Rows whose Col is below the watermark when they arrive are late.
type WatermarkSpec struct {
	Col   int   // column of the source
	Delay int64 // microseconds, >= 0
}

func (w *WatermarkSpec) describe(cols []types.Column) string {
	name := fmt.Sprintf("$%d", w.Col)
	if w.Col < len(cols) {
		name = cols[w.Col].Name
	}
	if w.Delay == 0 {
		return name
	}
	return name + " - " + micros(w.Delay)
}

// TimeWindowSpec describes a TimeWindow node: TUMBLE(t, Col, Size[,
// Offset]) or HOP(t, Col, Slide, Size[, Offset]). A row whose Col is ts
// belongs to every window [s, s+Size) with s <= ts < s+Size and s ≡ Offset
// (mod Slide); for TUMBLE Slide == Size, so there is exactly one. Times
// are microseconds since the epoch; Size is a multiple of Slide.
type TimeWindowSpec struct {
	Hop    bool
	Col    int
	Size   int64
	Slide  int64
	Offset int64
}

func (w *TimeWindowSpec) describe(cols []types.Column) string {
	name := fmt.Sprintf("$%d", w.Col)
	if w.Col < len(cols) {
		name = cols[w.Col].Name
	}
	var d string
	if w.Hop {
		d = fmt.Sprintf("HopWindow %s slide %s size %s", name, micros(w.Slide), micros(w.Size))
	} else {
		d = fmt.Sprintf("TumbleWindow %s size %s", name, micros(w.Size))
	}
	if w.Offset != 0 {
		d += " offset " + micros(w.Offset)
	}
	return d
}

func micros(us int64) string { return (time.Duration(us) * time.Microsecond).String() }
