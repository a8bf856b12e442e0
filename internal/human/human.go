// Package human writes values for people to read: Bytes (binary units),
// OneLine (an error kept on one line), Plural (the s of a count),
// Milliseconds (a duration as float ms). Standard library only.
package human

import (
	"errors"
	"fmt"
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
