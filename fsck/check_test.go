package fsck

import (
	"testing"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/record"
)

func TestCleanLogHasNoProblems(t *testing.T) {
	for _, codec := range []record.Codec{record.None, record.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			writeLog(t, fsys, "/p", codec, 200, 5)
			for _, deep := range []bool{false, true} {
				r := mustCheck(t, fsys, "/p", Options{Deep: deep})
				if !r.Clean() {
					t.Fatalf("deep=%v: problems in a clean log:%s", deep, dumpProblems(r))
				}
				st := r.Stats
				if st.Batches != 200 || st.Records != 1000 || st.FirstOffset != 0 || st.LastOffset != 999 {
					t.Errorf("stats %+v, want 200 batches, 1000 records, offsets [0, 999]", st)
				}
				if st.Segments < 2 {
					t.Errorf("%d segments; the test wants several", st.Segments)
				}
				if st.Codecs[codec.String()] != 200 {
					t.Errorf("codecs %v", st.Codecs)
				}
				if r.Layout != "seglog" {
					t.Errorf("layout %q", r.Layout)
				}
			}
		})
	}
}
