-- The sweep for apps whose turn died with its process (engine/actions.rs
-- abandon_stuck) looks for views still running, every minute.
CREATE INDEX app_views_running ON app_views (status, created_at);
