package gitrepo

import "testing"

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU[string, int](3)
	c.add("a", 1, 1)
	c.add("b", 2, 1)
	c.add("c", 3, 1)
	c.get("a") // b is now the least recently used
	c.add("d", 4, 1)
	if _, ok := c.get("b"); ok {
		t.Error("b survived eviction")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
}

func TestLRUCost(t *testing.T) {
	c := newLRU[string, []byte](10)
	c.add("big", make([]byte, 11), 11)
	if c.len() != 0 {
		t.Error("an entry larger than the budget was stored")
	}
	c.add("a", make([]byte, 6), 6)
	c.add("b", make([]byte, 6), 6)
	if _, ok := c.get("a"); ok || c.len() != 1 {
		t.Errorf("len %d after exceeding the budget, want 1 (a evicted)", c.len())
	}
	c.add("b", make([]byte, 2), 2) // replacing updates the cost
	c.add("c", make([]byte, 8), 8)
	if c.len() != 2 {
		t.Errorf("len = %d, want 2", c.len())
	}
}
