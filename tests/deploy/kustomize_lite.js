// kustomize_lite.js DIR: renders the kustomization in DIR to stdout as a
// multi-document YAML stream, for machines without kustomize (kubectl
// kustomize). It implements only what deploy/k8s uses, and fails on any
// other kustomization field rather than ignoring it:
// - resources: YAML files, or directories holding a kustomization.yaml;
// - patches: { path } strategic-merge patches, matched to a resource by
//   apiVersion, kind, namespace and name. Maps merge; the lists Kubernetes
//   merges by key (containers and volumes by name, ...: kMergeKeys) merge by
//   that key; every other list, and any scalar, is replaced; null deletes;
// - images: { name, newName, newTag } for containers and initContainers.
// k8s_validate.sh compares its output with kubectl kustomize where that
// exists, so the two cannot drift apart unnoticed.
"use strict";
const fs = require("fs");
const path = require("path");
const YAML = require("yaml");

const kMergeKeys = {
  containers: "name",
  initContainers: "name",
  volumes: "name",
  env: "name",
  volumeMounts: "mountPath",
  ports: "containerPort",
  imagePullSecrets: "name",
};
const kSupported = new Set(["apiVersion", "kind", "resources", "patches", "images"]);

function fail(message) {
  throw new Error(message);
}

function readDocuments(file) {
  return YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))
    .map((doc) => {
      if (doc.errors.length) fail(`${file}: ${doc.errors[0].message}`);
      return doc.toJS();
    })
    .filter((obj) => obj !== null);
}

function isMap(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function mergeList(base, patch, key) {
  const out = base.map((item) => structuredClone(item));
  for (const item of patch) {
    const i = out.findIndex((b) => b[key] === item[key]);
    if (i >= 0) out[i] = merge(out[i], item);
    else out.push(structuredClone(item));
  }
  return out;
}

function merge(base, patch) {
  if (!isMap(base) || !isMap(patch)) return structuredClone(patch);
  const out = structuredClone(base);
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[field];
    } else if (Array.isArray(value) && Array.isArray(out[field]) && kMergeKeys[field]) {
      out[field] = mergeList(out[field], value, kMergeKeys[field]);
    } else if (isMap(value) && isMap(out[field])) {
      out[field] = merge(out[field], value);
    } else {
      out[field] = structuredClone(value);
    }
  }
  return out;
}

function identity(obj) {
  const m = obj.metadata || {};
  return `${obj.apiVersion}/${obj.kind}/${m.namespace || ""}/${m.name}`;
}

function setImages(obj, images) {
  const spec = obj.spec && obj.spec.template ? obj.spec.template.spec : obj.spec;
  if (!spec) return;
  for (const c of [...(spec.containers || []), ...(spec.initContainers || [])]) {
    const name = c.image.replace(/[:@].*$/, "");
    const rule = images.find((r) => r.name === name);
    if (!rule) continue;
    const tag = rule.newTag !== undefined ? `:${rule.newTag}` : (c.image.match(/:[^/]*$/) || [""])[0];
    c.image = (rule.newName || name) + tag;
  }
}

function render(dir) {
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
    .map((f) => path.join(dir, f))
    .find((f) => fs.existsSync(f));
  if (!file) fail(`${dir}: no kustomization.yaml`);
  const [k] = readDocuments(file);
  for (const field of Object.keys(k)) {
    if (!kSupported.has(field)) fail(`${file}: kustomize_lite does not implement '${field}'`);
  }
  const objects = [];
  for (const r of k.resources || []) {
    const p = path.join(dir, r);
    objects.push(...(fs.statSync(p).isDirectory() ? render(p) : readDocuments(p)));
  }
  for (const patch of k.patches || []) {
    if (Object.keys(patch).some((f) => f !== "path")) fail(`${file}: only patches[].path is implemented`);
    for (const p of readDocuments(path.join(dir, patch.path))) {
      const i = objects.findIndex((o) => identity(o) === identity(p));
      if (i < 0) fail(`${file}: patch ${patch.path} matches no resource ${identity(p)}`);
      objects[i] = merge(objects[i], p);
    }
  }
  for (const obj of objects) setImages(obj, k.images || []);
  return objects;
}

if (require.main === module) {
  try {
    const objects = render(process.argv[2] || ".");
    process.stdout.write(objects.map((o) => YAML.stringify(o)).join("---\n"));
  } catch (e) {
    console.error(`kustomize_lite: ${e.message}`);
    process.exit(1);
  }
}

module.exports = { render };
