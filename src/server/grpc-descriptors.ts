import {
  toBinary,
  type DescEnum,
  type DescExtension,
  type DescFile,
  type DescMessage,
  type DescService,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

// What server reflection answers from: the files of the served services (generated in gen/,
// embedded by protobuf-es) and every file they import, transitively (google/api/annotations.proto,
// google/protobuf/*.proto, vigil/v1/options.proto...), indexed by file name, by every fully-qualified
// symbol they declare, and by extension (extendee, number); plus files no service imports whose
// types clients still meet (google/rpc/error_details.proto: the Any details of error statuses).

export interface DescriptorIndex {
  /** Fully-qualified names of the served services, sorted. */
  services: string[];
  /** "vigil/v1/events.proto" -> file. */
  files: Map<string, DescFile>;
  /** Messages, fields, oneofs, enums, enum values, services, methods, extensions -> file. */
  symbols: Map<string, DescFile>;
  /** Extendee type name -> extension number -> the file declaring the extension. */
  extensions: Map<string, Map<number, DescFile>>;
  /** A file's FileDescriptorProto, serialized (computed once). */
  bytes(file: DescFile): Uint8Array;
  /** The file's transitive imports, each once, dependencies before dependents. */
  imports(file: DescFile): DescFile[];
}

const fileName = (f: DescFile) => f.proto.name;

export function createDescriptorIndex(services: DescService[], extraFiles: DescFile[] = []): DescriptorIndex {
  const files = new Map<string, DescFile>();
  const symbols = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();

  const addExtension = (file: DescFile, ext: DescExtension) => {
    symbols.set(ext.typeName, file);
    let byNumber = extensions.get(ext.extendee.typeName);
    if (!byNumber) extensions.set(ext.extendee.typeName, (byNumber = new Map()));
    byNumber.set(ext.number, file);
  };
  const addEnum = (file: DescFile, e: DescEnum) => {
    symbols.set(e.typeName, file);
    // Enum values are scoped like their enum (C++ scoping): siblings of the enum, not children.
    const scope = e.typeName.slice(0, e.typeName.length - e.name.length);
    for (const v of e.values) symbols.set(scope + v.name, file);
  };
  const addMessage = (file: DescFile, m: DescMessage) => {
    symbols.set(m.typeName, file);
    for (const f of m.fields) symbols.set(`${m.typeName}.${f.name}`, file);
    for (const o of m.oneofs) symbols.set(`${m.typeName}.${o.name}`, file);
    for (const n of m.nestedMessages) addMessage(file, n);
    for (const e of m.nestedEnums) addEnum(file, e);
    for (const x of m.nestedExtensions) addExtension(file, x);
  };
  const addFile = (file: DescFile) => {
    if (files.has(fileName(file))) return;
    files.set(fileName(file), file);
    for (const d of file.dependencies) addFile(d);
    for (const m of file.messages) addMessage(file, m);
    for (const e of file.enums) addEnum(file, e);
    for (const x of file.extensions) addExtension(file, x);
    for (const s of file.services) {
      symbols.set(s.typeName, file);
      for (const m of s.methods) symbols.set(`${s.typeName}.${m.name}`, file);
    }
  };
  for (const s of services) addFile(s.file);
  for (const f of extraFiles) addFile(f);

  const serialized = new WeakMap<DescFile, Uint8Array>();
  const closures = new WeakMap<DescFile, DescFile[]>();
  return {
    services: [...new Set(services.map((s) => s.typeName))].sort(),
    files,
    symbols,
    extensions,
    bytes(file) {
      let b = serialized.get(file);
      if (!b) serialized.set(file, (b = toBinary(FileDescriptorProtoSchema, file.proto)));
      return b;
    },
    imports(file) {
      let list = closures.get(file);
      if (!list) {
        const seen = new Set<DescFile>();
        const visit = (f: DescFile) => {
          for (const d of f.dependencies) {
            if (seen.has(d)) continue;
            seen.add(d);
            visit(d);
          }
        };
        visit(file);
        closures.set(file, (list = [...seen]));
      }
      return list;
    },
  };
}
