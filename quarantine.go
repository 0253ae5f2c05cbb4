package seglog

import "github.com/seglog/seglog/segment"

// Quarantine describes bytes that recovery cut from the log but kept, byte
// for byte, in a quarantine file beside the segments instead of deleting
// them: the rest of a segment's .log from damage that valid batches follow
// (Pos is the byte where the damage began, Reason the damage), or a whole
// later segment that bytes lost before it made unreachable (Pos 0, Reason
// nil). Batches and Records count the valid batches found in them,
// FirstOffset and LastOffset their range. Open logs each one and hands it
// to Options.OnQuarantine.
//
// A quarantine file is named "<base>-<pos>.quarantine" (20 digits each);
// neither seglog nor Kafka reads it as part of the log, and neither deletes
// it. `seglog dump FILE` shows its batches; `seglog fsck` lists it until it
// is moved away.
type Quarantine = segment.Quarantine
