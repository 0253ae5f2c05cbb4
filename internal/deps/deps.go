package deps
import (
	_ "github.com/edsrzf/mmap-go"
	_ "github.com/google/btree"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "golang.org/x/sys/unix"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "github.com/spf13/cobra"
)
