"""Hand-written lexicons for the generated movie-review sentiment suite.

Every list is a plain tuple of strings (no duplicates), so that sampling from it
with a seeded generator is deterministic.  Adjectives and verbs are chosen to be
natural with movie nouns ("The plot is gripping.", "I hated the ending.").
"""

from __future__ import annotations

# --------------------------------------------------------------------------- nouns
MOVIE_NOUNS = (
    "movie", "film", "plot", "acting", "script", "director", "cast", "soundtrack",
    "story", "ending", "dialogue", "cinematography", "performance", "screenplay",
    "sequel", "score", "villain", "lead actor", "premise", "pacing", "editing",
    "direction", "humor", "finale", "twist",
)

# Count nouns that read naturally after an adjective: "It is a wonderful film."
MOVIE_COUNT_NOUNS = (
    "movie", "film", "story", "script", "sequel", "performance", "ending",
    "soundtrack", "screenplay", "premise", "twist", "finale", "villain", "plot",
    "score", "cast", "documentary", "comedy", "thriller", "drama",
)

# ---------------------------------------------------------------------- adjectives
POSITIVE_ADJS = (
    "good", "great", "excellent", "amazing", "wonderful", "fantastic", "brilliant",
    "superb", "outstanding", "beautiful", "enjoyable", "delightful", "impressive",
    "terrific", "marvelous", "captivating", "engaging", "charming", "moving",
    "hilarious", "gripping", "masterful", "stunning", "clever", "exceptional",
    "fascinating", "entertaining", "memorable", "touching", "lovely", "remarkable",
    "exciting",
)

NEGATIVE_ADJS = (
    "bad", "terrible", "awful", "horrible", "boring", "dull", "weak", "poor",
    "dreadful", "lousy", "mediocre", "tedious", "disappointing", "annoying",
    "forgettable", "clumsy", "painful", "pointless", "ridiculous", "stupid",
    "unwatchable", "bland", "lifeless", "messy", "unbearable", "pathetic", "lame",
    "incoherent", "tiresome", "awkward", "atrocious", "frustrating",
)

NEUTRAL_ADJS = (
    "American", "British", "French", "Italian", "Japanese", "Korean", "Spanish",
    "German", "Indian", "international", "animated", "silent", "black-and-white",
    "independent", "foreign", "subtitled", "digital", "live-action", "recent",
    "English-language", "Canadian", "Mexican",
)

# -------------------------------------------------------------------------- verbs
# (base form, past form)
POSITIVE_VERBS = (
    ("love", "loved"), ("like", "liked"), ("enjoy", "enjoyed"), ("admire", "admired"),
    ("adore", "adored"), ("appreciate", "appreciated"), ("treasure", "treasured"),
    ("recommend", "recommended"), ("relish", "relished"), ("value", "valued"),
)

NEGATIVE_VERBS = (
    ("hate", "hated"), ("dislike", "disliked"), ("despise", "despised"),
    ("regret", "regretted"), ("loathe", "loathed"), ("detest", "detested"),
    ("resent", "resented"), ("abhor", "abhorred"),
)

NEUTRAL_VERBS = (
    ("see", "saw"), ("watch", "watched"), ("rent", "rented"), ("stream", "streamed"),
    ("review", "reviewed"), ("discuss", "discussed"), ("describe", "described"),
    ("analyze", "analyzed"), ("summarize", "summarized"),
)

# --------------------------------------------------------------------- modifiers
INTENSIFIERS = (
    "really", "very", "extremely", "incredibly", "truly", "absolutely",
    "exceptionally", "remarkably", "particularly", "so", "amazingly", "especially",
    "genuinely", "seriously", "unbelievably", "exceedingly", "tremendously",
    "utterly", "awfully", "most",
)

VERB_INTENSIFIERS = (
    "really", "truly", "absolutely", "totally", "thoroughly", "genuinely",
    "sincerely", "deeply", "completely", "honestly",
)

REDUCERS = (
    "somewhat", "kind of", "a little", "slightly", "sort of", "fairly", "mildly",
    "a bit", "moderately", "marginally", "partially", "reasonably", "rather",
    "probably", "a tad", "occasionally",
)

VERB_REDUCERS = (
    "somewhat", "kind of", "sort of", "partly", "mildly", "slightly", "moderately",
    "occasionally", "almost", "probably",
)

# ------------------------------------------------------------------------ phrases
POSITIVE_PHRASES = (
    "I loved it.", "Highly recommended.", "It was a joy to watch.", "What a great film!",
    "I would watch it again.", "A real masterpiece.", "Two thumbs up.", "Absolutely brilliant.",
    "I enjoyed every minute.", "Don't miss it.", "It's a must-see.", "Simply wonderful.",
    "I had a great time.", "One of the best films of the year.", "Pure fun.",
    "I can't wait to see it again.", "A wonderful experience.", "Five stars.",
    "I was delighted.", "Great job by everyone.",
)

NEGATIVE_PHRASES = (
    "I hated it.", "What a waste of time.", "Avoid it.", "It was terrible.",
    "I want my money back.", "A total disaster.", "Two thumbs down.", "Absolutely awful.",
    "I regretted every minute.", "Don't bother.", "Skip this one.", "Simply dreadful.",
    "I was bored to tears.", "One of the worst films of the year.", "Pure torture.",
    "I walked out.", "A miserable experience.", "Zero stars.", "I was so disappointed.",
    "Shame on everyone involved.",
)

# -------------------------------------------------------------------------- people
# Names that double as common English words (Will, Hope, Grace, Frank...) are left out.
MALE_FIRST_NAMES = (
    "John", "Michael", "David", "James", "Robert", "Daniel", "Thomas", "Andrew",
    "Samuel", "Carlos", "Juan", "Luis", "Diego", "Mohammed", "Ahmed", "Omar",
    "Hassan", "Hiroshi", "Kenji", "Wei", "Raj", "Arjun", "Vikram", "Kwame",
    "Kofi", "Chinedu", "Jamal", "Ivan", "Dmitri", "Pierre", "Luca", "Matteo",
    "Tom", "Peter", "Steven", "Kevin",
)

FEMALE_FIRST_NAMES = (
    "Mary", "Sarah", "Emily", "Jessica", "Emma", "Olivia", "Sophia", "Maria",
    "Ana", "Sofia", "Fatima", "Aisha", "Leila", "Yuki", "Mei", "Priya",
    "Ananya", "Amara", "Ngozi", "Zainab", "Olga", "Natasha", "Chloe", "Camille",
    "Giulia", "Lucia", "Keisha", "Hannah", "Rachel", "Laura", "Elena", "Ingrid",
    "Julia", "Susan", "Nicole", "Karen",
)

FIRST_NAMES = MALE_FIRST_NAMES + FEMALE_FIRST_NAMES

LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Garcia", "Martinez", "Rodriguez",
    "Nguyen", "Kim", "Chen", "Wang", "Patel", "Singh", "Khan", "Okafor", "Mensah",
    "Ivanov", "Kowalski", "Mueller", "Rossi", "Dubois", "Tanaka", "Sato", "Cohen",
    "Haddad", "Hernandez", "Lopez", "Silva", "Santos", "Andersson", "Murphy",
    "Taylor", "Anderson", "Thompson", "Walker", "Okonkwo", "Yamamoto", "Moreau",
)

ROLES = (
    "actor", "director", "filmmaker", "screenwriter", "producer", "critic",
    "comedian", "composer", "cinematographer", "star", "editor", "novelist",
)

# ----------------------------------------------------------------------- places
# Cities/countries that are also common film titles or person names
# (Chicago, Casablanca, Phoenix, Sydney, Jordan, Georgia...) are left out.
CITIES = (
    "New York", "Los Angeles", "San Francisco", "Boston", "Seattle", "Toronto",
    "Vancouver", "Mexico City", "London", "Paris", "Berlin", "Madrid", "Rome",
    "Tokyo", "Seoul", "Beijing", "Shanghai", "Mumbai", "Delhi", "Cairo", "Lagos",
    "Nairobi", "Melbourne", "Dublin", "Amsterdam", "Stockholm", "Moscow",
    "Istanbul", "Buenos Aires", "Rio de Janeiro", "Bangkok", "Hong Kong",
    "Singapore", "Manila", "Jakarta", "Johannesburg", "Prague", "Vienna",
    "Budapest", "Warsaw", "Lisbon", "Barcelona", "Athens", "Montreal", "Miami",
    "Denver", "New Orleans", "Las Vegas",
)

COUNTRIES = (
    "United States", "Canada", "Mexico", "Brazil", "Argentina", "Chile", "Peru",
    "Colombia", "England", "Ireland", "Scotland", "France", "Germany", "Spain",
    "Italy", "Portugal", "Netherlands", "Sweden", "Norway", "Denmark", "Poland",
    "Russia", "Ukraine", "Greece", "Egypt", "Nigeria", "Kenya", "Ethiopia",
    "South Africa", "Morocco", "Iran", "Iraq", "Israel", "India", "Pakistan",
    "China", "Japan", "South Korea", "Vietnam", "Thailand", "Indonesia",
    "Philippines", "Australia", "New Zealand", "Cuba", "Jamaica",
)

# ------------------------------------------------------------ protected attributes
RACES = (
    "black", "white", "Asian", "Hispanic", "Latino", "Arab", "Native American",
    "Middle Eastern", "South Asian", "East Asian", "Pacific Islander", "multiracial",
)

NATIONALITIES = (
    "American", "British", "Chinese", "Indian", "Mexican", "Nigerian", "French",
    "German", "Japanese", "Korean", "Brazilian", "Russian", "Iranian", "Egyptian",
    "Italian", "Spanish", "Canadian", "Australian", "Pakistani", "Vietnamese",
    "Filipino", "Indonesian", "Polish", "Swedish", "Irish", "Kenyan", "Ethiopian",
    "Argentinian", "Israeli", "Palestinian", "Greek", "Turkish",
)

RELIGIONS = (
    "Christian", "Muslim", "Jewish", "Hindu", "Buddhist", "Sikh", "Catholic",
    "Protestant", "Mormon", "atheist", "agnostic", "Jain", "Taoist", "Orthodox",
    "Evangelical", "Baha'i",
)

# ------------------------------------------------------------------ contractions
# (expanded, contracted).  Ambiguous contractions ("I'd" = I would / I had) are left out.
CONTRACTIONS = (
    ("is not", "isn't"), ("are not", "aren't"), ("was not", "wasn't"),
    ("were not", "weren't"), ("do not", "don't"), ("does not", "doesn't"),
    ("did not", "didn't"), ("cannot", "can't"), ("could not", "couldn't"),
    ("would not", "wouldn't"), ("should not", "shouldn't"), ("will not", "won't"),
    ("has not", "hasn't"), ("have not", "haven't"), ("had not", "hadn't"),
    ("must not", "mustn't"), ("it is", "it's"), ("that is", "that's"),
    ("what is", "what's"), ("there is", "there's"), ("here is", "here's"),
    ("who is", "who's"), ("he is", "he's"), ("she is", "she's"), ("I am", "I'm"),
    ("you are", "you're"), ("we are", "we're"), ("they are", "they're"),
    ("I have", "I've"), ("you have", "you've"), ("we have", "we've"),
    ("they have", "they've"), ("I will", "I'll"), ("you will", "you'll"),
    ("we will", "we'll"), ("they will", "they'll"), ("it will", "it'll"),
    ("let us", "let's"),
)

# ---------------------------------------------------------------- neutral words
NEUTRAL_WORDS = (
    "movie", "film", "theater", "screen", "ticket", "popcorn", "scene", "actor",
    "director", "camera", "trailer", "sequel", "studio", "audience", "seat",
    "minute", "hour", "character", "watch", "see", "American", "international",
    "chapter", "episode", "release", "premiere", "credits", "genre",
)

# Non-sentiment framing of statements for the temporal "used to" test.
USED_TO_FRAMES = (
    "I used to think", "I used to believe", "I used to feel", "I once thought",
    "There was a time when I thought",
)

OPINION_HOLDERS = ("Some people", "Critics", "My friends", "Many viewers", "Other reviewers")
