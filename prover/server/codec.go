package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// malformedCodec is the server's protobuf codec. grpc-go answers a
// request message its codec cannot decode with INTERNAL ("grpc: error
// unmarshalling request"), which reads as a server fault to retry and
// alert on; a truncated or garbage message, an overlong varint or invalid
// UTF-8 in a string field is the caller's error. So a failed Unmarshal is
// noted against its message and reported as success; the first
// interceptor (checkDecoded) and every stream's RecvMsg find the note and
// answer INVALID_ARGUMENT with the decoder's words, before any handler
// sees the half-decoded message.
type malformedCodec struct {
	encoding.CodecV2
	bad *sync.Map // message pointer -> decode error
}

func newMalformedCodec() malformedCodec {
	return malformedCodec{CodecV2: encoding.GetCodecV2(proto.Name), bad: &sync.Map{}}
}

func (c malformedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if err := c.CodecV2.Unmarshal(data, v); err != nil {
		c.bad.Store(v, err)
	}
	return nil
}

// decodeErr is the INVALID_ARGUMENT status of m when it failed to decode
// (and forgets the note), nil when it decoded.
func (c malformedCodec) decodeErr(m any) error {
	if e, ok := c.bad.LoadAndDelete(m); ok {
		return status.Errorf(codes.InvalidArgument, "malformed request message: %v", e)
	}
	return nil
}

func (c malformedCodec) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := c.decodeErr(req); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (c malformedCodec) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, decodedStream{ss, c})
}

type decodedStream struct {
	grpc.ServerStream
	c malformedCodec
}

func (s decodedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.c.decodeErr(m)
}
