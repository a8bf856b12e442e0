package main

import (
	"testing"
)

// A negative --constraints is refused by submit before any dial, in the
// words prove and setup use (it was a flag parse error).
func TestSubmitRefusesNegativeConstraintsInProvesWords(t *testing.T) {
	_, _, proveErr := runCuzk(t, "prove", "--constraints", "-1")
	_, _, submitErr := runCuzk(t, "submit", "--constraints", "-1", "--addr", "127.0.0.1:1")
	if proveErr == nil || submitErr == nil {
		t.Fatalf("prove: %v, submit: %v; want both refused", proveErr, submitErr)
	}
	if submitErr.Error() != proveErr.Error() {
		t.Errorf("submit --constraints -1: %q; prove says %q", submitErr, proveErr)
	}
}
