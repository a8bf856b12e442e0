package otelcuzk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// FileExporter writes spans to a local file as OTLP JSON lines: one
// {"resourceSpans":[...]} object per line per export batch (see
// MarshalOTLPJSON), the layout of the OpenTelemetry Collector's file exporter.
// It is safe for concurrent use.
type FileExporter struct {
	mu     sync.Mutex
	path   string
	f      *os.File // nil until the first export when the file was missing
	closed bool
}

// NewFileExporter opens the file at path for appending, as the Collector's
// file exporter does: earlier traces stay, and several processes (a daemon
// and a local prove) may write the same file, each line whole (O_APPEND). A
// missing file is created on the first export, so a run that fails before
// any span ends leaves no empty file behind; NewFileExporter checks that it
// could be created. It fails, naming the path, when the file cannot be
// opened or created for writing.
func NewFileExporter(path string) (*FileExporter, error) {
	if path == "" {
		return nil, errors.New("trace file: empty path")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		return &FileExporter{path: path, f: f}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("trace file %q: %w", path, err)
	}
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("trace file %q cannot be created: %w", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return &FileExporter{path: path}, nil
}

// Path is the file the exporter writes ("" for a nil *FileExporter).
func (e *FileExporter) Path() string {
	if e == nil {
		return ""
	}
	return e.path
}

// ExportSpans appends spans as one line; nil spans are left out. After
// Shutdown, and for a nil *FileExporter, it returns an error.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e == nil {
		return errors.New("nil trace file exporter (make one with NewFileExporter)")
	}
	if len(spans) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := MarshalOTLPJSON(TracesData(spans))
	if err != nil {
		return err
	}
	line = append(line, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("trace file exporter is shut down")
	}
	if e.f == nil {
		f, err := os.OpenFile(e.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("trace file %q: %w", e.path, err)
		}
		e.f = f
	}
	// One write per line keeps lines whole for a concurrent reader.
	if _, err := e.f.Write(line); err != nil {
		return fmt.Errorf("trace file %q: %w", e.path, err)
	}
	return nil
}

// Shutdown closes the file; later calls, and a nil *FileExporter's, do
// nothing.
func (e *FileExporter) Shutdown(context.Context) error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.f == nil {
		return nil
	}
	if err := e.f.Close(); err != nil {
		return fmt.Errorf("trace file %q: %w", e.path, err)
	}
	return nil
}
