// Package human writes values for people to read: Bytes (binary units),
// Duration (a time, as every command prints one), OneLine (an error kept
// on one line), Plural (the s of a count), Milliseconds (a duration as
// float ms). Standard library only.
package human

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Bytes writes b in the largest binary unit it reaches, one decimal
// ("1.5 GiB", "512.0 KiB"), or as "N B" below 1 KiB.
func Bytes(b uint64) string {
	for _, u := range []struct {
		name  string
		scale uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.scale {
			return fmt.Sprintf("%.1f %s", float64(b)/float64(u.scale), u.name)
		}
	}
	return fmt.Sprintf("%d B", b)
}

// OneLine keeps an error on one line: the newlines errors.Join puts
// between its errors become "; ". nil and one-line errors are returned
// as they are (so errors.Is still sees through them).
func OneLine(err error) error {
	if err == nil || !strings.Contains(err.Error(), "\n") {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
}

// Plural is "s" unless n is 1, for "%d span%s".
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Milliseconds is d in milliseconds, fractions kept (1.5 for 1500 µs).
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Duration writes d as every line a user reads prints a time (a step's
// time, an estimate, a job's timings, an uptime): a space before the
// unit, about three significant digits, the unit chosen after rounding
// (so 999.96 ms is "1.0 s", never "1000.0 ms"):
//
//	"0.05 ms", "4.12 ms" (under 10 ms), "57.0 ms" (under 1 s),
//	"9.3 s" (under 10 s), "26 s" (under a minute), "2 min 5 s",
//	"1 h 3 min".
//
// A negative d is written with a leading "-". Tables of a trace (the
// waterfall, the diff) keep their fixed ms columns; this is for prose.
func Duration(d time.Duration) string {
	if d < 0 {
		if d == math.MinInt64 {
			d++ // -MinInt64 overflows; a nanosecond off at 292 years
		}
		return "-" + Duration(-d)
	}
	const (
		ms  = time.Millisecond
		sec = time.Second
	)
	switch {
	case d < 10*ms-5*time.Microsecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(ms))
	case d < sec-50*time.Microsecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(ms))
	case d < 10*sec-50*ms:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute-500*ms:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d < time.Hour-30*sec:
		r := d.Round(sec)
		m, s := int(r/time.Minute), int(r%time.Minute/sec)
		if s == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %d s", m, s)
	}
	r := d.Round(time.Minute)
	h, m := int64(r/time.Hour), int64(r%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}
