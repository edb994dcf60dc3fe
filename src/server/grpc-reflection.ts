import { create, type DescFile, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { DescriptorIndex } from "./grpc-descriptors.js";

// gRPC server reflection (grpc/reflection/v1/reflection.proto and its v1alpha twin, the same
// messages under another package): what grpcurl, `buf curl` without --schema and Postman ask for.
// One bidirectional stream per client session; each request gets one response, in order:
//
// - list_services: every served service (vigil.v1.*, grpc.health.v1.Health, the reflection services);
// - file_by_filename, file_containing_symbol, file_containing_extension: the file's
//   FileDescriptorProto and, the first time on this stream, those of its transitive imports;
// - all_extension_numbers_of_type: the numbers of the known extensions of a message type;
// - an unknown file, symbol, type or extension: error_response NOT_FOUND, and the stream goes on.
// A request with no message_request set ends the stream with INVALID_ARGUMENT (as grpc-go does).

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;
/** A response's oneof as plain values: the same for v1 and v1alpha (same fields, same numbers). */
type Answer = NonNullable<MessageInitShape<typeof v1.ServerReflectionResponseSchema>["messageResponse"]>;

const notFound = (message: string): Answer => ({
  case: "errorResponse",
  value: { errorCode: Code.NotFound, errorMessage: message },
});

function answer(index: DescriptorIndex, req: Request, sent: Set<DescFile>): Answer {
  const files = (file: DescFile): Answer => {
    // The asked-for file always; its imports only when this stream has not had them yet.
    const out = [index.bytes(file)];
    sent.add(file);
    for (const d of index.imports(file)) {
      if (sent.has(d)) continue;
      sent.add(d);
      out.push(index.bytes(d));
    }
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
  };
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } };
    case "fileByFilename": {
      const f = index.files.get(r.value);
      return f ? files(f) : notFound(`file not found: ${r.value}`);
    }
    case "fileContainingSymbol": {
      const f = index.symbols.get(r.value);
      return f ? files(f) : notFound(`symbol not found: ${r.value}`);
    }
    case "fileContainingExtension": {
      const f = index.extensions.get(r.value.containingType)?.get(r.value.extensionNumber);
      return f ? files(f) : notFound(`extension not found: ${r.value.containingType} ${r.value.extensionNumber}`);
    }
    case "allExtensionNumbersOfType": {
      if (!index.symbols.has(r.value)) return notFound(`type not found: ${r.value}`);
      const numbers = [...(index.extensions.get(r.value)?.keys() ?? [])].sort((a, b) => a - b);
      return { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } };
    }
    default:
      throw new ConnectError("invalid reflection request, no message_request set", Code.InvalidArgument);
  }
}

async function* stream<Res>(
  index: DescriptorIndex,
  requests: AsyncIterable<Request>,
  respond: (req: Request, a: Answer) => Res,
): AsyncGenerator<Res> {
  const sent = new Set<DescFile>();
  for await (const req of requests) yield respond(req, answer(index, req, sent));
}

export function reflectionV1(index: DescriptorIndex): ServiceImpl<typeof v1.ServerReflection> {
  return {
    serverReflectionInfo: (requests) =>
      stream(index, requests, (req, a) =>
        create(v1.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req as v1.ServerReflectionRequest,
          messageResponse: a,
        }),
      ),
  };
}

export function reflectionV1alpha(index: DescriptorIndex): ServiceImpl<typeof v1alpha.ServerReflection> {
  return {
    serverReflectionInfo: (requests) =>
      stream(index, requests, (req, a) =>
        create(v1alpha.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req as v1alpha.ServerReflectionRequest,
          messageResponse: a as MessageInitShape<typeof v1alpha.ServerReflectionResponseSchema>["messageResponse"],
        }),
      ),
  };
}
