#!/bin/sh
# Regenerates prover/api/cuzkv1 (engine.pb.go, engine_grpc.pb.go) from
# proto/cuzk/v1/engine.proto; `make proto` runs it. It needs only Go and the
# module proxy: buf (its compiler in place of protoc) runs with go run, and
# the plugins are built with go install into .dev/proto-bin (ignored by git)
# at the versions the generated files' headers name. buf sends the plugins
# no compiler version, so the headers say "protoc (unknown)".
set -eu
cd "$(dirname "$0")/.."
BUF=github.com/bufbuild/buf/cmd/buf@v1.75.0
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
bin="$PWD/.dev/proto-bin"
GOBIN="$bin" go install "$PROTOC_GEN_GO"
GOBIN="$bin" go install "$PROTOC_GEN_GO_GRPC"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PATH="$bin:$PATH" go run "$BUF" generate proto --template proto/buf.gen.yaml --output "$out"
# paths=source_relative writes cuzk/v1/...; the package folder is flat.
mv "$out"/cuzk/v1/engine.pb.go "$out"/cuzk/v1/engine_grpc.pb.go prover/api/cuzkv1/
