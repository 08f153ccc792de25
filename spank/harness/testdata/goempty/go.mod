module goempty

go 1.26
