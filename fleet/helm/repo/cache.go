package repo

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// chartKey names one chart version in one repository: what is downloaded
// at most once.
type chartKey struct {
	repo, chart, version string
}

func (k chartKey) String() string { return k.repo + "\x00" + k.chart + "\x00" + k.version }

// archiveCache keeps chart archives by digest, in memory (least recently
// used first out, bounded by bytes) and, when dir is set, on disk, with a
// map from chart version to digest so that a version is fetched once.
//
// On disk, archives are dir/sha256/HEX.tgz and the map entries
// dir/refs/HEX.json, HEX being the SHA-256 of the chart key; both are
// written to a temporary file and renamed, so a crash leaves no torn files.
type archiveCache struct {
	dir      string
	maxBytes int64

	mu    sync.Mutex
	refs  map[chartKey]string // digest ("sha256:HEX") by chart version
	lru   *list.List          // of *cachedArchive, most recently used first
	items map[string]*list.Element
	size  int64
}

type cachedArchive struct {
	digest string
	data   []byte
}

// diskRef is a map entry on disk.
type diskRef struct {
	Repo    string `json:"repo"`
	Chart   string `json:"chart"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

func newArchiveCache(dir string, maxBytes int64) *archiveCache {
	return &archiveCache{
		dir:      dir,
		maxBytes: maxBytes,
		refs:     map[chartKey]string{},
		lru:      list.New(),
		items:    map[string]*list.Element{},
	}
}

// get returns the archive of k, if it is cached in memory or on disk.
func (a *archiveCache) get(k chartKey) (*Chart, bool) {
	a.mu.Lock()
	digest, ok := a.refs[k]
	if ok {
		if el, ok := a.items[digest]; ok {
			a.lru.MoveToFront(el)
			data := el.Value.(*cachedArchive).data
			a.mu.Unlock()
			return &Chart{Name: k.chart, Version: k.version, Digest: digest, Archive: data}, true
		}
	}
	a.mu.Unlock()

	if a.dir == "" {
		return nil, false
	}
	if !ok {
		var found bool
		if digest, found = a.readRef(k); !found {
			return nil, false
		}
	}
	data, found := a.readArchive(digest)
	if !found {
		return nil, false
	}
	a.mu.Lock()
	a.refs[k] = digest
	a.remember(digest, data)
	a.mu.Unlock()
	return &Chart{Name: k.chart, Version: k.version, Digest: digest, Archive: data}, true
}

// put stores c as the archive of k. A failure to write the disk cache is
// returned, but c is kept in memory all the same.
func (a *archiveCache) put(k chartKey, c *Chart) error {
	a.mu.Lock()
	a.refs[k] = c.Digest
	a.remember(c.Digest, c.Archive)
	a.mu.Unlock()
	if a.dir == "" {
		return nil
	}
	hexDigest := strings.TrimPrefix(c.Digest, "sha256:")
	if err := writeAtomic(filepath.Join(a.dir, "sha256", hexDigest+".tgz"), c.Archive); err != nil {
		return err
	}
	ref, err := json.Marshal(diskRef{Repo: k.repo, Chart: k.chart, Version: k.version, Digest: c.Digest})
	if err != nil {
		return err
	}
	return writeAtomic(a.refPath(k), ref)
}

// remember puts data at the front of the memory cache and evicts from the
// back until it fits. Callers hold a.mu.
func (a *archiveCache) remember(digest string, data []byte) {
	if el, ok := a.items[digest]; ok {
		a.lru.MoveToFront(el)
		return
	}
	if int64(len(data)) > a.maxBytes {
		return
	}
	a.items[digest] = a.lru.PushFront(&cachedArchive{digest: digest, data: data})
	a.size += int64(len(data))
	for a.size > a.maxBytes {
		old := a.lru.Remove(a.lru.Back()).(*cachedArchive)
		delete(a.items, old.digest)
		a.size -= int64(len(old.data))
	}
}

func (a *archiveCache) refPath(k chartKey) string {
	sum := sha256.Sum256([]byte(k.String()))
	return filepath.Join(a.dir, "refs", hex.EncodeToString(sum[:])+".json")
}

// readRef reads the digest of k from disk.
func (a *archiveCache) readRef(k chartKey) (string, bool) {
	b, err := os.ReadFile(a.refPath(k))
	if err != nil {
		return "", false
	}
	var ref diskRef
	if json.Unmarshal(b, &ref) != nil || ref.Repo != k.repo || ref.Chart != k.chart || ref.Version != k.version {
		return "", false
	}
	return ref.Digest, true
}

// readArchive reads an archive from disk, checking that it still has its
// digest: a damaged file is a cache miss, not a broken chart.
func (a *archiveCache) readArchive(digest string) ([]byte, bool) {
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(a.dir, "sha256", hexDigest+".tgz"))
	if err != nil {
		return nil, false
	}
	if sha256Digest(data) != digest {
		return nil, false
	}
	return data, true
}

// sha256Digest returns data's digest as "sha256:HEX".
func sha256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}
