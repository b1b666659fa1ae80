package gitrepo

import (
	"container/list"
	"sync"
)

// lru is a least-recently-used cache bounded by the total cost of its
// entries (a count when every cost is 1, bytes for file contents). It is
// safe for concurrent use.
type lru[K comparable, V any] struct {
	mu      sync.Mutex
	maxCost int64
	cost    int64
	order   *list.List // front is most recently used; values are *lruEntry
	entries map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	cost int64
}

func newLRU[K comparable, V any](maxCost int64) *lru[K, V] {
	return &lru[K, V]{maxCost: maxCost, order: list.New(), entries: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// add stores val under key, evicting the least recently used entries to
// stay within the budget. An entry costing more than the whole budget is
// not stored.
func (c *lru[K, V]) add(key K, val V, cost int64) {
	if cost > c.maxCost {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*lruEntry[K, V])
		c.cost += cost - e.cost
		e.val, e.cost = val, cost
		c.order.MoveToFront(el)
	} else {
		c.entries[key] = c.order.PushFront(&lruEntry[K, V]{key: key, val: val, cost: cost})
		c.cost += cost
	}
	for c.cost > c.maxCost {
		el := c.order.Back()
		e := el.Value.(*lruEntry[K, V])
		c.order.Remove(el)
		delete(c.entries, e.key)
		c.cost -= e.cost
	}
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
