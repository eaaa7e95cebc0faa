#!/usr/bin/python3
"""Deterministic data sets for bench/import_bench.sh.

  import_data.py KIND DIR MIB [--seed N]

KIND:
  random    incompressible samples: files of 256 KiB..8 MiB of random bytes
            (images, audio, already-compressed shards).
  text      text-like shards: JSON lines of synthetic tokenised text drawn
            from a Zipf-distributed vocabulary, 4..16 MiB per shard
            (compressible, no repeats across shards).
  dedup-v1  random files, 30% of them byte-for-byte duplicates of others
            (the same sample stored under several names).
  dedup-v2  the dedup-v1 set (same seed) after small edits: a few bytes
            overwritten in 20% of the files, a few bytes inserted in 10%,
            5% of the files removed and 5% new ones added.
  small     many small files of 4..64 KiB of random bytes, 1000 per
            directory (thumbnails, audio clips, one sample per file), where
            the cost per file matters more than the cost per byte.
  large     a few large shards of random bytes, 256 MiB each (tar or
            parquet shards): many batches per file.

The same KIND, MIB and seed always give the same bytes. DIR is created and
must not exist.
"""

import argparse
import itertools
import json
import os
import random
import sys

MIB = 1 << 20


def random_sizes(rng, total, low, high):
    sizes = []
    while total > 0:
        size = min(total, rng.randint(low, high))
        sizes.append(size)
        total -= size
    return sizes


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_random(out, total, rng):
    for i, size in enumerate(random_sizes(rng, total, 256 << 10, 8 * MIB)):
        write(os.path.join(out, f"samples/{i // 100:03d}/sample-{i:05d}.bin"), rng.randbytes(size))


def make_large(out, total, rng):
    shard = 256 * MIB
    for i in range((total + shard - 1) // shard):
        path = os.path.join(out, f"shards/shard-{i:04d}.bin")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            left = min(shard, total - i * shard)
            while left > 0:  # randbytes takes at most 256 MiB - 1 at once
                piece = min(left, 16 * MIB)
                f.write(rng.randbytes(piece))
                left -= piece


def make_small(out, total, rng):
    for i, size in enumerate(random_sizes(rng, total, 4 << 10, 64 << 10)):
        write(os.path.join(out, f"items/{i // 1000:03d}/item-{i:06d}.bin"), rng.randbytes(size))


def vocabulary(rng, words):
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    vocab = set()
    while len(vocab) < words:
        length = min(2 + int(rng.expovariate(1 / 5)), 14)
        vocab.add("".join(rng.choices(letters, k=length)))
    vocab = sorted(vocab)
    rng.shuffle(vocab)  # rank (frequency) unrelated to spelling
    return vocab


def make_text(out, total, rng):
    vocab = vocabulary(rng, 20000)
    cum_weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocab))))
    record = 0
    for shard, size in enumerate(random_sizes(rng, total, 4 * MIB, 16 * MIB)):
        lines = []
        written = 0
        while written < size:
            tokens = rng.choices(vocab, cum_weights=cum_weights, k=rng.randint(20, 400))
            line = json.dumps({"id": record, "lang": "xx", "score": round(rng.random(), 4),
                               "text": " ".join(tokens)}) + "\n"
            record += 1
            lines.append(line)
            written += len(line)
        write(os.path.join(out, f"shards/shard-{shard:05d}.jsonl"), "".join(lines).encode())


def dedup_v1_files(total, rng):
    """{relative path: bytes} of the v1 set."""
    files = {}
    uniques = []
    for i, size in enumerate(random_sizes(rng, total * 7 // 10, 256 << 10, 4 * MIB)):
        uniques.append(rng.randbytes(size))
        files[f"v/{i // 100:03d}/item-{i:05d}.bin"] = uniques[-1]
    # Duplicates up to 30% of the bytes, under other names.
    dup_total = total - sum(len(d) for d in uniques)
    n = len(files)
    while dup_total > 0:
        data = rng.choice(uniques)
        files[f"v/{n // 100:03d}/item-{n:05d}.bin"] = data
        dup_total -= len(data)
        n += 1
    return files


def make_dedup(out, total, rng, version):
    files = dedup_v1_files(total, rng)
    if version == 2:
        edit_rng = random.Random(rng.random())
        names = sorted(files)
        for name in names:
            roll = edit_rng.random()
            data = files[name]
            if roll < 0.20:  # overwrite a few bytes in place
                at = edit_rng.randrange(len(data) - 16)
                files[name] = data[:at] + edit_rng.randbytes(16) + data[at + 16:]
            elif roll < 0.30:  # insert a few bytes
                at = edit_rng.randrange(len(data))
                files[name] = data[:at] + edit_rng.randbytes(100) + data[at:]
            elif roll < 0.35:
                del files[name]
        for i in range(len(names) // 20):
            files[f"new/item-{i:05d}.bin"] = edit_rng.randbytes(edit_rng.randint(256 << 10, 2 * MIB))
    for name, data in sorted(files.items()):
        write(os.path.join(out, name), data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["random", "text", "dedup-v1", "dedup-v2", "small", "large"])
    parser.add_argument("dir")
    parser.add_argument("mib", type=int)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if os.path.exists(args.dir):
        sys.exit(f"{args.dir} exists")
    rng = random.Random(f"{args.kind.split('-')[0]}/{args.seed}")
    total = args.mib * MIB
    os.makedirs(args.dir)
    if args.kind == "random":
        make_random(args.dir, total, rng)
    elif args.kind == "text":
        make_text(args.dir, total, rng)
    elif args.kind == "small":
        make_small(args.dir, total, rng)
    elif args.kind == "large":
        make_large(args.dir, total, rng)
    else:
        make_dedup(args.dir, total, rng, 1 if args.kind == "dedup-v1" else 2)


if __name__ == "__main__":
    main()
