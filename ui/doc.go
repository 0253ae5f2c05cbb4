// Package ui serves a store (package store) to a browser: its topics,
// partitions drawn as logs of segments to scale, the retention boundary the
// next cleaner pass would apply, each consumer group's committed offset and
// lag, and the batches and records of any segment. A Playground wraps a
// temporary store on a simulated clock, filled with a teaching scenario
// (hotel bookings read by two consumer groups), and adds actions: produce by
// key, consume with a group, rewind a group, move time forward so retention
// trims whole segments.
//
// Start with New, given a store opened read-only, and serve the Server it
// returns with net/http; or NewPlayground and its Server. seglog ui (and
// seglog ui --playground) is this, with flags.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary; it
// makes no request outside the server it came from. docs/ui.md describes
// each element.
package ui
