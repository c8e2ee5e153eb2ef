module airlock.test/mcp-go-server

go 1.19
