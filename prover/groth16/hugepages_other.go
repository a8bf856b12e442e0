//go:build !linux

package prover

// adviseHugePages does nothing outside Linux (no transparent huge pages).
func adviseHugePages(b []byte) {}
