#!/usr/bin/python3
"""Reads a folder of sample files with a PyTorch DataLoader and checks every byte.

The manifest is `sha256sum` output ("HASH  RELATIVE/PATH" per line) for every
sample under --root. Each epoch must deliver every sample exactly once, each
with the bytes the manifest names, and the work must be spread over all
--workers worker processes. Prints samples/s and MiB/s per epoch and exits
non-zero on the first problem found.

Run it with /usr/bin/python3: Debian's python3-torch is only on that
interpreter's path.
"""

import argparse
import collections
import hashlib
import os
import sys
import time

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:
    sys.exit(f"python3-torch is missing ({e}): run scripts/install-deps.sh")


class SampleFiles(Dataset):
    """Sample i is the whole content of file i, as a uint8 tensor."""

    def __init__(self, root, names):
        self.root = root
        self.names = names

    def __len__(self):
        return len(self.names)

    def __getitem__(self, index):
        with open(os.path.join(self.root, self.names[index]), "rb") as f:
            data = f.read()
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else -1
        # The bytes travel back to the main process through the DataLoader's
        # shared-memory tensors: the hash is taken after that trip.
        return index, worker, torch.frombuffer(bytearray(data), dtype=torch.uint8)


def keep_as_list(batch):
    # Samples differ in length, so the default collate (stacking) cannot apply.
    return batch


def read_manifest(path):
    entries = []
    with open(path) as f:
        for line in f:
            digest, name = line.rstrip("\n").split("  ", 1)
            entries.append((os.path.normpath(name), digest))
    if not entries:
        sys.exit(f"empty manifest {path}")
    return entries


def run_epoch(loader, digests, workers):
    seen = collections.Counter()
    used_workers = set()
    total_bytes = 0
    start = time.monotonic()
    for batch in loader:
        for index, worker, tensor in batch:
            data = tensor.numpy().tobytes()
            actual = hashlib.sha256(data).hexdigest()
            if actual != digests[index]:
                return None, f"sample {index}: sha256 {actual}, manifest says {digests[index]}"
            seen[index] += 1
            used_workers.add(worker)
            total_bytes += len(data)
    seconds = time.monotonic() - start
    missing = [i for i in range(len(digests)) if seen[i] == 0]
    repeated = [i for i, n in seen.items() if n > 1]
    if missing or repeated:
        return None, f"missing samples {missing[:10]}, repeated samples {repeated[:10]}"
    if used_workers != set(range(workers)):
        return None, f"samples came from workers {sorted(used_workers)}, expected 0..{workers - 1}"
    return (len(digests), total_bytes, seconds), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="folder the manifest paths are relative to")
    parser.add_argument("--manifest", required=True, help="sha256sum output for the samples")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    entries = read_manifest(args.manifest)
    names = [name for name, _ in entries]
    digests = [digest for _, digest in entries]
    torch.manual_seed(1234)
    loader = DataLoader(
        SampleFiles(args.root, names),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        collate_fn=keep_as_list,
    )
    for epoch in range(1, args.epochs + 1):
        result, error = run_epoch(loader, digests, args.workers)
        if error:
            sys.exit(f"epoch {epoch}: {error}")
        samples, total_bytes, seconds = result
        print(
            f"epoch {epoch}: {samples} samples, {total_bytes} bytes in {seconds:.3f} s: "
            f"{samples / seconds:.1f} samples/s, {total_bytes / seconds / 2**20:.1f} MiB/s",
            flush=True,
        )
    print(f"OK: {args.epochs} epochs x {len(names)} samples verified with {args.workers} workers")


if __name__ == "__main__":
    main()
