// Package fuzz holds seglog's cross-package fuzz targets: FuzzLog drives a
// whole Log on the crash-aware in-memory filesystem with operations decoded
// from the fuzzer's bytes — appends through both paths and every codec,
// reads, time lookups, truncation (inside the log and below its start),
// retention, iterations that a truncation overtakes, syncs, clean reopens
// and simulated power losses — and checks it against a plain in-memory
// model after every step. Bit 6 of an input's first byte enables the ops
// added for truncation below the start and iteration across a truncation,
// so inputs saved before them keep their meaning.
//
// Run it beyond its seed corpus with
//
//	go test -run '^$' -fuzz FuzzLog -fuzztime 5m ./fuzz
package fuzz
