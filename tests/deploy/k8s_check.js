// k8s_check.js RENDERED.yaml [KUSTOMIZE_LITE.yaml] > daemon-args.txt
//
// Validates every object of a rendered kustomization offline, two ways:
// - against the JSON schemas kubernetes-models ships for each kind (types,
//   formats, required fields, enums);
// - against the Kubernetes 1.29 API types (kubernetes-types@1.29.0) with the
//   TypeScript compiler: each object becomes a typed object literal, so an
//   unknown or misspelt field anywhere in it, a missing required one or a
//   wrong type is a compile error. (kubernetes-models has no release built on
//   the 1.29 API: its schemas are those of 1.33, which accept fields that
//   1.29 does not know; the compiler check pins 1.29.)
// With a second file (kustomize_lite's rendering of the same directory),
// also checks that both renderings hold the same objects.
// Prints, for each container that runs a geofs daemon, one line
// "BINARY ARG ARG ..." so that the caller can check the flags against the
// binary's --help. Exits 1 on the first kind of failure, after reporting all.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const util = require("util");
const YAML = require("yaml");
const ts = require("typescript");

const kDaemons = new Set(["geofs-hubd", "geofs-spoked", "geofsctl"]);

function load(file) {
  return YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))
    .map((d) => d.toJS())
    .filter((o) => o !== null);
}

function id(o) {
  return `${o.kind}/${(o.metadata && o.metadata.namespace) || "-"}/${o.metadata && o.metadata.name}`;
}

function splitApiVersion(apiVersion) {
  const i = apiVersion.lastIndexOf("/");
  return i < 0 ? ["", apiVersion] : [apiVersion.slice(0, i), apiVersion.slice(i + 1)];
}

function schemaErrors(o) {
  const [group, version] = splitApiVersion(o.apiVersion);
  const module = ["kubernetes-models", group, version, o.kind].filter(Boolean).join("/");
  let Model;
  try {
    Model = require(module)[o.kind];
  } catch (e) {
    return [`no schema for ${o.apiVersion} ${o.kind} (${module})`];
  }
  try {
    new Model(o).validate();
    return [];
  } catch (e) {
    return [e.message];
  }
}

// One TypeScript source holding every object as a typed literal; returns the
// compiler's messages, each prefixed with the object it is about.
function typeErrors(objects) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "geofs-k8s-types-"));
  const file = path.join(dir, "objects.ts");
  const lines = [];
  const owner = []; // line number -> object id
  objects.forEach((o, i) => {
    const [group, version] = splitApiVersion(o.apiVersion);
    const dirName = group === "" ? "core" : group.split(".")[0];
    const body = JSON.stringify(o, null, 2).split("\n");
    lines.push(`import type { ${o.kind} as T${i} } from "kubernetes-types/${dirName}/${version}";`);
    owner.push(id(o));
    lines.push(`export const o${i}: T${i} = ${body[0]}`);
    owner.push(id(o));
    for (const l of body.slice(1)) {
      lines.push(l);
      owner.push(id(o));
    }
    lines[lines.length - 1] += ";";
  });
  fs.writeFileSync(file, lines.join("\n") + "\n");
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: true,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    typeRoots: [],
    baseUrl: path.dirname(require.resolve("kubernetes-types/package.json")),
    paths: { "kubernetes-types/*": ["./*"] },
  });
  const messages = ts.getPreEmitDiagnostics(program).map((d) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    if (!d.file) return text;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${owner[line] || "?"}: line ${line + 1}: ${text}`;
  });
  fs.rmSync(dir, { recursive: true, force: true });
  return messages;
}

function podSpec(o) {
  if (o.kind === "Pod") return o.spec;
  if (o.kind === "CronJob") return o.spec.jobTemplate.spec.template.spec;
  return o.spec && o.spec.template ? o.spec.template.spec : null;
}

// The value after `flag` in a daemon's argv, or undefined.
function flagValue(argv, flag) {
  const i = argv.indexOf(flag);
  return i >= 0 ? String(argv[i + 1]) : undefined;
}

// Every NFS PersistentVolume must mount the way the spokes serve: NFSv3 over
// TCP without NLM, at the spoke DaemonSet's fixed --nfs-port and
// --mount-port, and the spoke's probes must watch that NFS port.
function mountErrors(objects) {
  const errors = [];
  const spokes = objects.filter((o) => o.kind === "DaemonSet");
  const spoke = spokes
    .flatMap((o) => o.spec.template.spec.containers)
    .find((c) => c.command && path.basename(c.command[0]) === "geofs-spoked");
  if (!spoke) return ["no DaemonSet runs geofs-spoked"];
  const nfsPort = flagValue(spoke.args, "--nfs-port");
  const mountPort = flagValue(spoke.args, "--mount-port");
  const namedPort = (p) => String((spoke.ports.find((q) => q.name === p) || { containerPort: p }).containerPort);
  for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    const socket = spoke[probe] && spoke[probe].tcpSocket;
    if (!socket) errors.push(`spoke has no tcpSocket ${probe}`);
    else if (namedPort(socket.port) !== nfsPort) errors.push(`spoke ${probe} watches ${socket.port}, not the NFS port ${nfsPort}`);
  }
  const pvs = objects.filter((o) => o.kind === "PersistentVolume" && o.spec.csi && o.spec.csi.driver === "nfs.csi.k8s.io");
  if (!pvs.length) errors.push("no csi-driver-nfs PersistentVolume");
  for (const pv of pvs) {
    const opts = pv.spec.mountOptions || [];
    const want = ["vers=3", "proto=tcp", "nolock", `port=${nfsPort}`, `mountport=${mountPort}`];
    for (const w of want) if (!opts.includes(w)) errors.push(`${id(pv)}: mountOptions lack ${w}`);
    if (!pv.spec.accessModes.includes("ReadWriteMany")) errors.push(`${id(pv)}: not ReadWriteMany`);
    if (pv.spec.csi.volumeAttributes.share !== flagValue(spoke.args, "--portal")) {
      errors.push(`${id(pv)}: share ${pv.spec.csi.volumeAttributes.share} is not the spoke's --portal`);
    }
  }
  if (!errors.length) console.error(`ok   NFS volume mounts the spoke's portal at port=${nfsPort},mountport=${mountPort}`);
  return errors;
}

function main() {
  const [rendered, lite] = process.argv.slice(2);
  const objects = load(rendered);
  let failed = false;
  const report = (what, messages) => {
    for (const m of messages) console.error(`FAIL ${what}: ${m}`);
    if (messages.length) failed = true;
  };
  if (objects.length === 0) report(rendered, ["no objects"]);

  for (const o of objects) {
    const errors = schemaErrors(o);
    report(`schema ${id(o)}`, errors);
    if (!errors.length) console.error(`ok   schema ${o.apiVersion} ${id(o)}`);
  }
  const typeMessages = typeErrors(objects);
  report("Kubernetes 1.29 types", typeMessages);
  if (!typeMessages.length) console.error(`ok   ${objects.length} objects type-check against Kubernetes 1.29`);

  if (lite) {
    const a = new Map(objects.map((o) => [id(o), o]));
    const b = new Map(load(lite).map((o) => [id(o), o]));
    const diffs = [];
    for (const k of new Set([...a.keys(), ...b.keys()])) {
      if (!util.isDeepStrictEqual(a.get(k), b.get(k))) diffs.push(`${k} differs`);
    }
    report("kubectl kustomize vs kustomize_lite", diffs);
    if (!diffs.length) console.error("ok   kustomize_lite renders what kubectl kustomize renders");
  }

  report("NFS volume", mountErrors(objects));

  for (const o of objects) {
    const spec = podSpec(o);
    if (!spec) continue;
    for (const c of [...(spec.initContainers || []), ...spec.containers]) {
      const argv = [...(c.command || []), ...(c.args || [])];
      const binary = argv.length ? path.basename(argv[0]) : "";
      if (kDaemons.has(binary)) process.stdout.write(`${binary} ${argv.slice(1).join(" ")}\n`);
    }
  }
  process.exit(failed ? 1 : 0);
}

main();
