package templates

import (
	"text/template/parse"
)

// Parsed Go templates are changed in two ways before they run, so that the output (see
// output) can bound what they do.
//
// Ticks: every range body, and the body of every template that others can call, starts with
// an empty text node. Executing it writes nothing, but it calls the output's Write, which
// counts the step and looks at the clock: a range over a billion numbers with an empty body,
// or a template that calls itself, would otherwise run without ever reaching the output.
//
// Guards: set and merge change maps in place. A map that is in a list many times, or a
// string that was stored in many maps, makes a value that prints far larger than the memory
// it takes, and text/template formats a value completely before it writes it. In a template
// set where one of them may have run, every action that prints a value that is not a literal
// first checks the value's size: {{ X }} becomes {{ $v := X }}{{ guard $v }}{{ $v }}. This
// is four times slower than printing directly, so templates that change no map do without.

// mutators are the functions that change a map in place and can make it larger.
var mutators = map[string]bool{"set": true, "merge": true, "mergeOverwrite": true, "mustMerge": true, "mustMergeOverwrite": true}

const (
	// guardFunc fails when its argument would print to more than MaxFieldSize.
	guardFunc = "_navarchGuard"
	// guardVar holds the value a guarded action prints.
	guardVar = "$_navarchValue"
)

// addTicks starts every range body of tree with an empty text node, and the template body
// too when calls says it can be called by other templates.
func addTicks(tree *parse.Tree, calls bool) {
	if tree == nil || tree.Root == nil {
		return
	}
	if calls {
		prependTick(tree.Root)
	}
	walkLists(tree.Root, func(n parse.Node) {
		if r, ok := n.(*parse.RangeNode); ok && r.List != nil {
			prependTick(r.List)
		}
	})
}

func prependTick(list *parse.ListNode) {
	tick := &parse.TextNode{NodeType: parse.NodeText, Pos: list.Pos, Text: []byte{}}
	list.Nodes = append([]parse.Node{tick}, list.Nodes...)
}

// callsMutator reports whether tree calls a function that changes a map in place.
func callsMutator(tree *parse.Tree) bool {
	if tree == nil || tree.Root == nil {
		return false
	}
	found := false
	walkLists(tree.Root, func(n parse.Node) {
		var pipes []*parse.PipeNode
		switch n := n.(type) {
		case *parse.ActionNode:
			pipes = append(pipes, n.Pipe)
		case *parse.IfNode:
			pipes = append(pipes, n.Pipe)
		case *parse.RangeNode:
			pipes = append(pipes, n.Pipe)
		case *parse.WithNode:
			pipes = append(pipes, n.Pipe)
		case *parse.TemplateNode:
			pipes = append(pipes, n.Pipe)
		}
		for _, p := range pipes {
			found = found || pipeCallsMutator(p)
		}
	})
	return found
}

func pipeCallsMutator(p *parse.PipeNode) bool {
	if p == nil {
		return false
	}
	for _, cmd := range p.Cmds {
		for _, arg := range cmd.Args {
			switch arg := arg.(type) {
			case *parse.IdentifierNode:
				if mutators[arg.Ident] {
					return true
				}
			case *parse.PipeNode:
				if pipeCallsMutator(arg) {
					return true
				}
			case *parse.ChainNode:
				if p, ok := arg.Node.(*parse.PipeNode); ok && pipeCallsMutator(p) {
					return true
				}
			}
		}
	}
	return false
}

// addGuards makes every action of tree that prints a value other than a literal check the
// value's size first.
func addGuards(tree *parse.Tree) {
	if tree == nil || tree.Root == nil {
		return
	}
	guardList(tree, tree.Root)
	walkLists(tree.Root, func(n parse.Node) {
		switch n := n.(type) {
		case *parse.IfNode:
			guardList(tree, n.List)
			guardList(tree, n.ElseList)
		case *parse.RangeNode:
			guardList(tree, n.List)
			guardList(tree, n.ElseList)
		case *parse.WithNode:
			guardList(tree, n.List)
			guardList(tree, n.ElseList)
		}
	})
}

func guardList(tree *parse.Tree, list *parse.ListNode) {
	if list == nil {
		return
	}
	nodes := make([]parse.Node, 0, len(list.Nodes))
	for _, n := range list.Nodes {
		a, ok := n.(*parse.ActionNode)
		if !ok || !printsComputedValue(a.Pipe) {
			nodes = append(nodes, n)
			continue
		}
		pos := a.Pos
		declare := &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Line: a.Line, Pipe: &parse.PipeNode{
			NodeType: parse.NodePipe, Pos: pos, Line: a.Line,
			Decl: []*parse.VariableNode{variable(pos)},
			Cmds: a.Pipe.Cmds,
		}}
		check := &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Line: a.Line, Pipe: &parse.PipeNode{
			NodeType: parse.NodePipe, Pos: pos, Line: a.Line,
			Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos,
				Args: []parse.Node{parse.NewIdentifier(guardFunc).SetTree(tree).SetPos(pos), variable(pos)}}},
		}}
		print := &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Line: a.Line, Pipe: &parse.PipeNode{
			NodeType: parse.NodePipe, Pos: pos, Line: a.Line,
			Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{variable(pos)}}},
		}}
		nodes = append(nodes, declare, check, print)
	}
	list.Nodes = nodes
}

func variable(pos parse.Pos) *parse.VariableNode {
	return &parse.VariableNode{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{guardVar}}
}

// printsComputedValue reports whether an action with pipeline p prints something other than
// a literal.
func printsComputedValue(p *parse.PipeNode) bool {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) == 0 {
		return false
	}
	last := p.Cmds[len(p.Cmds)-1]
	if len(last.Args) == 0 {
		return false
	}
	switch last.Args[0].(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return len(last.Args) > 1
	}
	return true
}

// walkLists calls visit for every node of list and of the lists inside it.
func walkLists(list *parse.ListNode, visit func(parse.Node)) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		visit(n)
		switch n := n.(type) {
		case *parse.IfNode:
			walkLists(n.List, visit)
			walkLists(n.ElseList, visit)
		case *parse.RangeNode:
			walkLists(n.List, visit)
			walkLists(n.ElseList, visit)
		case *parse.WithNode:
			walkLists(n.List, visit)
			walkLists(n.ElseList, visit)
		case *parse.ListNode:
			walkLists(n, visit)
		}
	}
}
