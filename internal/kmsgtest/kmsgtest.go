// Package kmsgtest reads record sections with franz-go's kmsg, the
// independent implementation of Kafka's formats that tests compare this
// module's decoding with.
package kmsgtest

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records splits an uncompressed RecordBatch v2 record section (a batch's
// bytes after its 61-byte header, kmsg.RecordBatch.Records) into kmsg
// records. Each record is framed by a varint length, which kmsg.Record
// reads itself as its Length field. It fails at a length that is negative
// or runs past the section, or at a record kmsg cannot read.
func Records(section []byte) ([]kmsg.Record, error) {
	var out []kmsg.Record
	for pos := 0; pos < len(section); {
		n, w := binary.Varint(section[pos:])
		if w <= 0 || n < 0 || int(n) > len(section)-pos-w {
			return out, fmt.Errorf("record %d: bad length at byte %d of the section", len(out), pos)
		}
		var r kmsg.Record
		if err := r.ReadFrom(section[pos : pos+w+int(n)]); err != nil {
			return out, fmt.Errorf("record %d at byte %d: kmsg: %w", len(out), pos, err)
		}
		out = append(out, r)
		pos += w + int(n)
	}
	return out, nil
}
