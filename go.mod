module github.com/seglog/seglog

go 1.26.8

require (
	github.com/edsrzf/mmap-go v1.2.0
	github.com/google/btree v1.1.3
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	github.com/spf13/cobra v1.10.2
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
