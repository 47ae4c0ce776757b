-- SessionDelete: sign out.
DELETE FROM operator_sessions WHERE id_hash = $1
