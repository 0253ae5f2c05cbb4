package compaction

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"

	"github.com/seglog/seglog/record"
)

// The record package keeps its codecs to v2 batches; a legacy wrapper's
// value is compressed the same ways (Kafka's legacy codecs: gzip, snappy
// with xerial framing, LZ4 frames), so these mirror them for compaction.

// errLegacyOpaque: a legacy wrapper this package cannot decode (an unknown
// codec, an old LZ4 frame, a value too large to expand). Its CRC held, so
// it is not damage: the round copies it as it is and maps none of it.
var errLegacyOpaque = errors.New("compaction: legacy wrapper cannot be decoded")

// xerialHeader starts snappy-java's framing; the header is it, then int32
// version 1 and int32 minimum compatible version 1.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

const xerialBlock = 32 << 10

// legacyDecompress appends the expansion of src to dst, never beyond
// limit bytes.
func legacyDecompress(dst []byte, c record.Codec, src []byte, limit int) ([]byte, error) {
	var r io.Reader
	switch c {
	case record.Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return dst, fmt.Errorf("%w: gzip: %v", errLegacyOpaque, err)
		}
		r = zr
	case record.LZ4:
		r = lz4.NewReader(bytes.NewReader(src))
	case record.Snappy:
		return legacySnappy(dst, src, limit)
	default:
		return dst, fmt.Errorf("%w: codec %d", errLegacyOpaque, c)
	}
	start := len(dst)
	buf := bytes.NewBuffer(dst)
	n, err := io.Copy(buf, io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return dst, fmt.Errorf("%w: %v: %v", errLegacyOpaque, c, err)
	}
	if n > int64(limit) {
		return dst, fmt.Errorf("%w: expands past %d bytes", errLegacyOpaque, limit)
	}
	out := buf.Bytes()
	return out[:start+int(n)], nil
}

// legacySnappy decodes xerial framing or a raw block, as snappy-java's
// reader does, checking each block's length against limit first.
func legacySnappy(dst, src []byte, limit int) ([]byte, error) {
	block := func(b []byte) error {
		n, err := s2.DecodedLen(b)
		if err != nil || n > limit-len(dst) {
			return fmt.Errorf("%w: snappy block (%d bytes, %v)", errLegacyOpaque, n, err)
		}
		out, err := s2.Decode(make([]byte, n), b)
		if err != nil {
			return fmt.Errorf("%w: snappy: %v", errLegacyOpaque, err)
		}
		dst = append(dst, out...)
		return nil
	}
	if len(src) < len(xerialHeader) || !bytes.Equal(src[:8], xerialHeader[:8]) {
		return dst, block(src)
	}
	src = src[len(xerialHeader):]
	for len(src) > 0 {
		if len(src) < 4 || uint64(binary.BigEndian.Uint32(src)) > uint64(len(src)-4) {
			return dst, fmt.Errorf("%w: truncated xerial block", errLegacyOpaque)
		}
		n := binary.BigEndian.Uint32(src)
		if err := block(src[4 : 4+n]); err != nil {
			return dst, err
		}
		src = src[4+n:]
	}
	return dst, nil
}

// legacyCompress appends the compressed form of src to dst, as Kafka's
// producer wrote it for the legacy formats.
func legacyCompress(dst []byte, c record.Codec, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	switch c {
	case record.Gzip:
		w := gzip.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return dst, err
		}
		if err := w.Close(); err != nil {
			return dst, err
		}
	case record.LZ4:
		w := lz4.NewWriter(buf)
		// The frame Kafka writes: 64 KiB independent blocks, no checksums.
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
			lz4.BlockChecksumOption(false), lz4.ConcurrencyOption(1)); err != nil {
			return dst, err
		}
		if _, err := w.Write(src); err != nil {
			return dst, err
		}
		if err := w.Close(); err != nil {
			return dst, err
		}
	case record.Snappy:
		buf.Write(xerialHeader)
		for len(src) > 0 {
			n := min(len(src), xerialBlock)
			enc := s2.EncodeSnappy(nil, src[:n])
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(enc)))
			buf.Write(l[:])
			buf.Write(enc)
			src = src[n:]
		}
	default:
		return dst, fmt.Errorf("compaction: legacy codec %d", c)
	}
	return buf.Bytes(), nil
}
