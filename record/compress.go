package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressed is the default cap on the decompressed size of one
// batch's record section: 8 times DefaultMaxBatchSize (about 8 MiB). It is a
// guard against decompression bombs, not a format limit: a legitimate
// batch whose records compress better than 8:1 and exceed the cap is
// refused with ErrDecompressLimit, and callers that expect such batches
// raise the limit (Iterator.MaxDecompressed).
const DefaultMaxDecompressed = 8 * DefaultMaxBatchSize

// xerialMagic starts a snappy-java (xerial) framed stream; the header is
// the magic, then int32 version 1 and int32 minimum compatible version 1.
var xerialHeader = [16]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

// xerialBlockSize is snappy-java's default block size, the uncompressed
// bytes per framed block.
const xerialBlockSize = 32 << 10

// appendWriter is an io.Writer that appends to a slice, so the streaming
// compressors can write straight into a builder's buffer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type gzipEnc struct {
	w  *gzip.Writer
	aw appendWriter
}

// The decoders keep their source reader with them so that decoding a
// batch allocates nothing once the pools are warm.
type gzipDec struct {
	r   gzip.Reader
	src bytes.Reader
}

type lz4Dec struct {
	r   *lz4.Reader
	src bytes.Reader
}

type lz4Enc struct {
	w  *lz4.Writer
	aw appendWriter
}

var (
	gzipEncPool = sync.Pool{New: func() any {
		e := &gzipEnc{}
		e.w, _ = gzip.NewWriterLevel(&e.aw, gzip.DefaultCompression)
		return e
	}}
	lz4EncPool = sync.Pool{New: func() any {
		e := &lz4Enc{}
		e.w = lz4.NewWriter(&e.aw)
		return e
	}}
	// Zstd encoders are costly to create (tables, history), so they are
	// pooled; concurrency 1 keeps EncodeAll synchronous with no goroutines.
	zstdEncPool = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic(err) // only invalid options fail, and these are constants
		}
		return e
	}}
	gzipDecPool = sync.Pool{New: func() any { return new(gzipDec) }}
	lz4DecPool  = sync.Pool{New: func() any { return &lz4Dec{r: lz4.NewReader(nil)} }}
	// zstdDecPools holds one pool per decompression limit, because the
	// limit is a decoder option.
	zstdDecPools sync.Map // int -> *sync.Pool
)

// lz4Options make pierrec/lz4 write the frame Kafka writes: FLG 0x60
// (version 1, independent blocks, no checksums, no content size), BD 0x40
// (64 KiB blocks).
var lz4Options = []lz4.Option{
	lz4.BlockSizeOption(lz4.Block64Kb),
	lz4.ChecksumOption(false),
	lz4.BlockChecksumOption(false),
	lz4.CompressionLevelOption(lz4.Fast),
	lz4.ConcurrencyOption(1),
}

// compress appends the compressed form of src to dst.
func compress(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		e := gzipEncPool.Get().(*gzipEnc)
		defer gzipEncPool.Put(e)
		e.aw.b = dst
		e.w.Reset(&e.aw)
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		dst, e.aw.b = e.aw.b, nil
		return dst, err
	case Snappy:
		return appendXerial(dst, src), nil
	case LZ4:
		e := lz4EncPool.Get().(*lz4Enc)
		defer lz4EncPool.Put(e)
		e.aw.b = dst
		e.w.Reset(&e.aw)
		if err := e.w.Apply(lz4Options...); err != nil {
			return dst, err
		}
		_, err := e.w.Write(src)
		if err == nil {
			err = e.w.Close()
		}
		dst, e.aw.b = e.aw.b, nil
		return dst, err
	case Zstd:
		e := zstdEncPool.Get().(*zstd.Encoder)
		defer zstdEncPool.Put(e)
		return e.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: id %d", ErrUnknownCodec, c)
}

// appendXerial writes snappy-java framing: the 16-byte header, then for
// each 32 KiB of input a big-endian int32 length and a raw snappy block.
func appendXerial(dst, src []byte) []byte {
	dst = append(dst, xerialHeader[:]...)
	for len(src) > 0 {
		n := min(len(src), xerialBlockSize)
		at := len(dst)
		dst = grow(dst, 4+s2.MaxEncodedLen(n))
		full := dst[:cap(dst)]
		enc := s2.EncodeSnappy(full[at+4:], src[:n])
		binary.BigEndian.PutUint32(full[at:], uint32(len(enc)))
		dst = dst[:at+4+len(enc)]
		src = src[n:]
	}
	return dst
}

// grow returns b with room for n more bytes beyond len(b), keeping len.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), 2*cap(b)+n)
	copy(nb, b)
	return nb
}

// decompress decodes src (the record section of a batch compressed with
// c) into dst[:0], never growing the output past limit bytes. Damaged
// input yields an error to be wrapped as corruption; exceeding the limit
// yields ErrDecompressLimit.
func decompress(dst []byte, c Codec, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	switch c {
	case Gzip:
		d := gzipDecPool.Get().(*gzipDec)
		defer gzipDecPool.Put(d)
		d.src.Reset(src)
		defer d.src.Reset(nil) // do not pin the batch from the pool
		if err := d.r.Reset(&d.src); err != nil {
			return dst, err
		}
		return readLimited(dst, &d.r, limit, len(src))
	case Snappy:
		return decodeSnappy(dst, src, limit)
	case LZ4:
		d := lz4DecPool.Get().(*lz4Dec)
		defer lz4DecPool.Put(d)
		d.src.Reset(src)
		defer d.src.Reset(nil)
		d.r.Reset(&d.src)
		return readLimited(dst, d.r, limit, len(src))
	case Zstd:
		p := zstdDecPool(limit)
		d := p.Get().(*zstd.Decoder)
		defer p.Put(d)
		out, err := d.DecodeAll(src, dst)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return out, fmt.Errorf("%w (%d bytes): zstd: %v", ErrDecompressLimit, limit, err)
		}
		return out, err
	}
	return dst, fmt.Errorf("%w: id %d", ErrUnknownCodec, c)
}

func zstdDecPool(limit int) *sync.Pool {
	if p, ok := zstdDecPools.Load(limit); ok {
		return p.(*sync.Pool)
	}
	p := &sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)),
			zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			panic(err) // only invalid options fail; limit is positive
		}
		return d
	}}
	actual, _ := zstdDecPools.LoadOrStore(limit, p)
	return actual.(*sync.Pool)
}

// readLimited reads r to EOF into dst, growing it geometrically from a
// guess based on the compressed size but never past limit.
func readLimited(dst []byte, r io.Reader, limit, srcLen int) ([]byte, error) {
	if cap(dst) == 0 {
		dst = make([]byte, 0, min(max(4*srcLen, 4<<10), limit))
	}
	stalls := 0
	for {
		end := min(cap(dst), limit)
		if len(dst) == end {
			if end >= limit {
				var one [1]byte
				n, err := io.ReadFull(r, one[:])
				if n > 0 {
					return dst, fmt.Errorf("%w (%d bytes)", ErrDecompressLimit, limit)
				}
				if err == io.EOF {
					return dst, nil
				}
				return dst, err
			}
			nb := make([]byte, len(dst), min(2*cap(dst)+4<<10, limit))
			copy(nb, dst)
			dst = nb
			end = cap(dst)
		}
		n, err := r.Read(dst[len(dst):end])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		// A reader stuck returning nothing must not spin us forever.
		if n == 0 {
			if stalls++; stalls > 100 {
				return dst, io.ErrNoProgress
			}
		} else {
			stalls = 0
		}
	}
}

// decodeSnappy accepts both xerial framing (recognised by its magic) and a
// raw snappy block, as snappy-java's reader does. Each block's decoded
// length is read from its preamble and checked against the limit before
// any memory is reserved for it.
func decodeSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < len(xerialHeader) || !bytes.Equal(src[:8], xerialHeader[:8]) {
		return snappyBlock(dst, src, limit)
	}
	src = src[len(xerialHeader):]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, fmt.Errorf("snappy: truncated xerial block length (%d bytes left)", len(src))
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst, fmt.Errorf("snappy: xerial block of %d bytes, only %d left", n, len(src))
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n], limit); err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}

// snappyBlock appends one decoded snappy block to dst.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if n > limit-len(dst) {
		return dst, fmt.Errorf("%w (%d bytes): snappy block declares %d bytes", ErrDecompressLimit, limit, n)
	}
	at := len(dst)
	if cap(dst)-at < n {
		nb := make([]byte, at, min(max(2*cap(dst), at+n), limit))
		copy(nb, dst)
		dst = nb
	}
	tail := dst[at : at+n]
	out, err := s2.Decode(tail, block)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	// Decode writes into tail when it is big enough; anything else means
	// the preamble lied.
	if len(out) != n || (n > 0 && &out[0] != &tail[0]) {
		return dst, fmt.Errorf("snappy: block decoded to %d bytes, declared %d", len(out), n)
	}
	return dst[:at+n], nil
}
