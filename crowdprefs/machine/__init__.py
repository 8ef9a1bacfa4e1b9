"""Machine judges: similarity scores from models, used as a prior by the campaign."""
