package store

import "github.com/seglog/seglog"

// LogStats returns what the partitions' Logs spent on rolls, flushes and
// recovery since Open, summed over every partition (the offsets topic's
// and deleted topics' included): counters that survive a partition's Log
// being closed and reopened by the budget of open Logs. Recovery happens
// when a partition is first opened after a crash (lazily, not all at
// Open), so Recoveries counts the partitions recovered so far. A
// read-only store writes nothing and counts nothing.
func (s *Store) LogStats() seglog.StatsSnapshot { return s.stats.Snapshot() }
