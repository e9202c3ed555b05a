module github.com/pgw-go/pgw

go 1.26
