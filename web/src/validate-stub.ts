import { fileDesc } from "@bufbuild/protobuf/codegenv2";

// The dashboard's stand-in for gen/buf/validate/validate_pb.js (web/vite.config.ts aliases it).
// Vigil's request messages carry their rules as protovalidate options, so each generated file
// imports validate.proto's descriptor; the dashboard validates nothing with them, and the full
// descriptor would add about 90 KB to its bundle. This is an empty file of the same name and
// package: the options stay unread bytes, as they are for any client without protovalidate.
// test/dashboard/serve.test.ts checks the bundle holds this and not the descriptor.
export const file_buf_validate_validate = fileDesc(
  "ChtidWYvdmFsaWRhdGUvdmFsaWRhdGUucHJvdG8SDGJ1Zi52YWxpZGF0ZWIGcHJvdG8y", // name, package, syntax "proto2"
);
