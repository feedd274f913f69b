-- A workspace's start screen per language (`widget::wire::Welcome` as JSON):
-- the empty chat's greeting and up to four suggested prompts.
ALTER TABLE workspaces ADD COLUMN welcome TEXT NOT NULL DEFAULT '{}';

-- The language the user's widget speaks (`en`, `es`, `fr`, `de`, `ja`,
-- `ar`), as the last turn request said: the model is told it, and the
-- server's own notices in a reply are written in it.
ALTER TABLE conversations ADD COLUMN lang TEXT;
