package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// envJaegerUI names the Jaeger UI (its base URL, e.g.
// http://127.0.0.1:16686, the dev profile's deploy/compose.dev.yaml) that
// the OTLP endpoint's traces reach: cuzk prove and cuzk submit then print
// the link to the trace there. The exporter cannot know it: the endpoint
// may be a Collector in front of several backends.
const envJaegerUI = "JAEGER_UI"

// jaegerUI returns $JAEGER_UI without a trailing slash, "" when unset, or
// a one-line error naming the variable when it is not an http(s) URL with
// a host, so a typo is refused before any proving rather than printed as
// a dead link afterwards.
func jaegerUI() (string, error) {
	v := strings.TrimSpace(os.Getenv(envJaegerUI))
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s=%q: want the Jaeger UI's http(s) base URL, such as http://127.0.0.1:16686", envJaegerUI, v)
	}
	return strings.TrimRight(v, "/"), nil
}

// jaegerTraceURL is the Jaeger UI page of traceID under base ("" when
// either is empty).
func jaegerTraceURL(base, traceID string) string {
	if base == "" || traceID == "" {
		return ""
	}
	return base + "/trace/" + traceID
}
