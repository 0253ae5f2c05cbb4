package fsck

import (
	"fmt"
	"strconv"
	"strings"
)

// File-name pieces, as Kafka names them (§3 of the format reference). They
// are repeated here rather than imported from segment so that checking
// depends on nothing that writes.
const (
	sufLog       = ".log"
	sufIndex     = ".index"
	sufTimeIndex = ".timeindex"
	sufTxnIndex  = ".txnindex"
	sufSnapshot  = ".snapshot"
	sufDeleted   = ".deleted"
	sufCleaned   = ".cleaned"
	sufSwap      = ".swap"
	sufTmp       = ".tmp"

	offsetDigits = 20

	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartOffsetFile = "log-start-offset-checkpoint"
	cleanerOffsetFile  = "cleaner-offset-checkpoint"
	replicationFile    = "replication-offset-checkpoint"
	leaderEpochFile    = "leader-epoch-checkpoint"
	partitionMetaFile  = "partition.metadata"
	cleanShutdownFile  = ".kafka_cleanshutdown"
	lockFile           = ".lock"
	metaPropertiesFile = "meta.properties"
)

// fileName returns the name of the file of the segment at base with suffix.
func fileName(base int64, suffix string) string {
	return fmt.Sprintf("%0*d%s", offsetDigits, base, suffix)
}

// segFile is a parsed segment-directory file name.
type segFile struct {
	base int64
	kind string // sufLog, sufIndex, ... without the temporary suffix
	temp string // "", sufDeleted, sufCleaned or sufSwap
}

// parseSegFile parses "<20 digits><kind>[<temp>]". badName is set for names
// that end like a segment file but whose number is not 20 digits, so they
// can be reported rather than silently ignored.
func parseSegFile(name string) (f segFile, ok, badName bool) {
	rest := name
	for _, t := range []string{sufDeleted, sufCleaned, sufSwap} {
		if strings.HasSuffix(rest, t) {
			f.temp = t
			rest = strings.TrimSuffix(rest, t)
			break
		}
	}
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return segFile{}, false, false
	}
	num, kind := rest[:dot], rest[dot:]
	switch kind {
	case sufLog, sufIndex, sufTimeIndex, sufTxnIndex, sufSnapshot:
	default:
		return segFile{}, false, false
	}
	if len(num) != offsetDigits || strings.Trim(num, "0123456789") != "" {
		return segFile{}, false, num != "" && strings.Trim(num, "0123456789") == ""
	}
	base, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return segFile{}, false, true
	}
	f.base, f.kind = base, kind
	return f, true, false
}
