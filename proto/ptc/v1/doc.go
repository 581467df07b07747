// Package ptcv1 holds the Go code generated from ptc's gRPC contract,
// proto/ptc/v1/runner.proto (protobuf package ptc.v1): the messages, the enums
// and the RunnerService client and server.
//
// The .proto file is the API reference: every message and field is documented
// there and in the generated types. The generated files (*.pb.go) are
// committed; regenerate them with scripts/gen-proto.sh after editing the
// .proto file, and check them with scripts/check-proto.sh.
//
// ErrorKind mirrors internal/fault.Kind value for value. The package imports
// only the protobuf and gRPC runtimes; it must not import the rest of ptc.
package ptcv1
