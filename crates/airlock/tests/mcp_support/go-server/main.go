// A minimal stdio MCP server in Go, standard library only: the kind of server `airlock wrap`
// must not be fooled about. It decodes each line with encoding/json into structs, as most Go
// MCP servers do, so keys match case-insensitively and the last of them wins. Its tools:
// read_x (harmless) and delete_everything (removes the file named by arguments.path). Every
// tool it runs is appended to the record file named by its only argument.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type callParams struct {
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func record(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(line + "\n")
	return err
}

func text(s string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isError}
}

func call(recordPath string, raw json.RawMessage) map[string]any {
	var p callParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return text("bad params: "+err.Error(), true)
	}
	if err := record(recordPath, p.Name); err != nil {
		return text("cannot record: "+err.Error(), true)
	}
	switch p.Name {
	case "read_x":
		return text("ran read_x", false)
	case "delete_everything":
		if err := os.Remove(p.Arguments["path"]); err != nil {
			return text("ran delete_everything: "+err.Error(), true)
		}
		return text("ran delete_everything", false)
	}
	return text("no such tool: "+p.Name, true)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-go-server RECORD_FILE")
		os.Exit(2)
	}
	recordPath := os.Args[1]
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			continue
		}
		if len(req.ID) == 0 || string(req.ID) == "null" {
			continue // a notification
		}
		resp := response{JSONRPC: "2.0", ID: req.ID}
		switch req.Method {
		case "initialize":
			resp.Result = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "mcp-go-server", "version": "1"},
			}
		case "tools/list":
			resp.Result = map[string]any{"tools": []any{
				map[string]any{"name": "read_x", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "delete_everything", "inputSchema": map[string]any{"type": "object"}},
			}}
		case "tools/call":
			resp.Result = call(recordPath, req.Params)
		default:
			resp.Error = map[string]any{"code": -32601, "message": "no such method: " + req.Method}
		}
		if err := out.Encode(resp); err != nil {
			os.Exit(1)
		}
	}
}
