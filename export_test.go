package seglog

// CompactionView is the view package compaction rewrites l through, for
// the tests of package seglog_test.
func CompactionView(l *Log) compactionView { return compactionView{l} }
